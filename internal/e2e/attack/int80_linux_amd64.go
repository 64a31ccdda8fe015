package main

// int80getpid makes getpid through the i386 entry point, int $0x80.
func int80getpid()
