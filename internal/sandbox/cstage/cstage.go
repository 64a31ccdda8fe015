// Package cstage holds the exec stage written in C (src/stage.c): the last
// restrictions on a command, then execve, in a freestanding static program
// of a few KiB instead of a second start of this Go binary. build.sh builds
// it for linux/amd64 and linux/arm64 with a pinned compiler; the release
// tooling and CI run it before go build, and [Blob] returns what was built
// for this architecture. Without that step there is no blob, and the
// sandbox runs its Go exec stage (exec_linux.go), which does the same.
// build.sh builds the sandbox's helper in C too (src/helper.c, with
// src/sys.h; [HelperBlob]; HELPER-PLAN.md), which the sandbox runs instead
// of its Go helper wherever both blobs were built.
//
// build.sh builds a third program too, for the git guard: src/limit.c
// ([LimitBlob]) sets the bounds on a run of git and becomes git, where the
// guard ran /bin/sh's ulimit before.
//
// It imports only the standard library and golang.org/x/sys/unix (for
// [SealedMemfd]); the sandbox package encodes the stage's instructions and
// decodes its reports (cstage_linux.go).
package cstage

import "embed"

// Protocol is the version of the instruction block and the reports; stage.c
// says the same in NSB_PROTOCOL, and refuses a block of another.
const Protocol = 1

// LimitProtocol is the version of limit.c's arguments; limit.c says the
// same in NSB_LIMIT_PROTOCOL.
const LimitProtocol = 1

// HelperProtocol is the version of the helper's block and reports;
// helper.c says the same in NSB_HELPER_PROTOCOL.
const HelperProtocol = 4

// bin holds the blobs build.sh wrote, if any, beside a README.
//
//go:embed bin
var bin embed.FS

// Name is the file name of the blob for goarch built from this stage.c and
// sys.h: stage-linux-GOARCH-HASH, HASH the first 16 hex digits of the
// SHA-256 of "nsb-cstage protocol N\n" followed by sys.h and stage.c.
// build.sh names it the same, and writes the hash into sums.go, which
// TestSums checks against the sources: the binary carries neither the
// sources nor their hashing.
func Name(goarch string) string {
	return "stage-linux-" + goarch + "-" + stageSum
}

// built returns the embedded blob named name, or nil.
func built(name string) []byte {
	b, err := bin.ReadFile("bin/" + name)
	if err != nil {
		return nil
	}
	return b
}

// Blob returns the stage built for goarch from this stage.c, or nil when
// none was built (or only one from another stage.c: never used).
func Blob(goarch string) []byte {
	return built(Name(goarch))
}

// HelperName is the file name of the helper in C built for goarch from
// this helper.c and sys.h: helper-linux-GOARCH-HASH, HASH the first 16 hex
// digits of the SHA-256 of "nsb-chelper protocol N\n" followed by sys.h
// and helper.c (helperSum, as Name's). build.sh names it the same, so a
// helper built from another helper.c is never used.
func HelperName(goarch string) string {
	return "helper-linux-" + goarch + "-" + helperSum
}

// HelperBlob returns the helper in C built for goarch from this source, or
// nil when none was built.
func HelperBlob(goarch string) []byte {
	return built(HelperName(goarch))
}

// LimitName is the file name of the git guard's bounds program built for
// goarch from this limit.c and sys.h: limit-linux-GOARCH-HASH, HASH as
// Name's, of "nsb-limit protocol N\n", sys.h and limit.c.
func LimitName(goarch string) string {
	return "limit-linux-" + goarch + "-" + limitSum
}

// LimitBlob returns the bounds program built for goarch from this source,
// or nil when none was built.
func LimitBlob(goarch string) []byte {
	return built(LimitName(goarch))
}
