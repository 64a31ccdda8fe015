package main

import (
	"bytes"
	"crypto/sha1"
	"fmt"
	"os"
)

// indexRename renames the entry from of the git index at path to to, a
// name of the same length git itself would never add (".git/hooks/x",
// "../x", "/abs"), and writes the index's SHA-1 checksum again: what any
// command can do to an index, with no git. A failure is one of the attempt's setup.
func indexRename(path, from, to string) error {
	if len(from) != len(to) {
		return fmt.Errorf("%q and %q differ in length", from, to)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if len(b) < sha1.Size {
		return fmt.Errorf("%s is too short for an index", path)
	}
	body := b[:len(b)-sha1.Size]
	old := append([]byte(from), 0)
	if bytes.Count(body, old) != 1 {
		return fmt.Errorf("%q is not once in %s", from, path)
	}
	body = bytes.Replace(body, old, append([]byte(to), 0), 1)
	sum := sha1.Sum(body)
	return os.WriteFile(path, append(body, sum[:]...), 0o644)
}
