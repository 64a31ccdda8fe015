//go:build linux && !amd64

package main

import (
	"fmt"
	"os"
)

// int80getpid has no equivalent here: a 64-bit arm64 process has no 32-bit
// system call entry.
func int80getpid() {
	fmt.Println("unsupported: no 32-bit system call entry on this architecture")
	os.Exit(4)
}
