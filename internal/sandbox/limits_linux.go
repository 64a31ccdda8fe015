package sandbox

// usesCgroup reports whether any limit is held by a cgroup.
func (m Mechanisms) usesCgroup() bool {
	return m.Memory == ByCgroup || m.Processes == ByCgroup || m.CPUs == ByCgroup
}

// countsTasks reports whether the process limit is held by a mechanism that
// reports nothing when it refuses a fork, so that the sandbox counts the
// command's tasks itself to tell that it was reached. Without namespaces
// the host's /proc holds every process, and they are not counted.
func (m Mechanisms) countsTasks() bool {
	return (m.Processes == ByRlimit || m.Processes == ByPidNamespace) && !m.WithoutNamespaces
}
