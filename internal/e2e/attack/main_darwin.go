//go:build darwin

// Command attack, on macOS: the attempts of the escape suite that apply
// there (main.go has Linux's). Each subcommand prints "ok" and exits 0
// when the attempt succeeded, or "denied: ERRNO" and exits 3 when it
// failed; "setup: ERROR" and exits 4 when it could not even be made.
package main

import (
	"fmt"
	"net"
	"os"
	"strconv"
	"syscall"
	"time"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: attack SUBCOMMAND [ARG...]")
		os.Exit(1)
	}
	arg := func(i int) string {
		if len(os.Args) <= i+1 {
			fmt.Fprintf(os.Stderr, "attack %s: missing argument %d\n", os.Args[1], i)
			os.Exit(1)
		}
		return os.Args[i+1]
	}
	var err error
	switch os.Args[1] {
	case "tcp-connect":
		err = dial("tcp", arg(1))
	case "unix-connect":
		err = dial("unix", arg(1))
	case "loopback":
		// Listen and connect on loopback: on macOS the host's, which the
		// sandbox denies (there is no loopback of its own).
		var l net.Listener
		l, err = net.Listen("tcp", "127.0.0.1:0")
		if err == nil {
			err = dial("tcp", l.Addr().String())
			l.Close()
		}
	case "kill":
		pid, _ := strconv.Atoi(arg(1))
		err = syscall.Kill(pid, syscall.Signal(0))
	case "index-rename":
		if e := indexRename(arg(1), arg(2), arg(3)); e != nil {
			fmt.Printf("setup: %v\n", e)
			os.Exit(4)
		}
	case "index-stat":
		if e := indexStat(arg(1), arg(2)); e != nil {
			fmt.Printf("setup: %v\n", e)
			os.Exit(4)
		}
	case "index-splice":
		if e := indexSplice(arg(1), arg(2), arg(3)); e != nil {
			fmt.Printf("setup: %v\n", e)
			os.Exit(4)
		}
	default:
		fmt.Fprintf(os.Stderr, "attack: unknown subcommand %q on macOS\n", os.Args[1])
		os.Exit(1)
	}
	if err != nil {
		fmt.Printf("denied: %v\n", err)
		os.Exit(3)
	}
	fmt.Println("ok")
}

func dial(network, addr string) error {
	c, err := net.DialTimeout(network, addr, 2*time.Second)
	if err == nil {
		c.Close()
	}
	return err
}
