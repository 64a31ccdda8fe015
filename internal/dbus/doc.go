// Package dbus is a minimal D-Bus client: it connects to a bus (or straight
// to a peer, as systemd's private socket is) over a unix socket, signs in
// with SASL EXTERNAL, makes method calls and waits for signals. That is what
// the sandbox needs to ask systemd for a transient scope, and nothing more:
// no fd passing, no object export, no introspection.
//
// The wire format follows the D-Bus specification: values are marshalled
// by their signature ([Marshal], [Unmarshal]), and a message read from a
// peer ([ReadMessage]) is checked as strictly as the specification asks
// (zero padding, valid strings, paths and signatures, bounded sizes and
// nesting) before anything is taken from it. A message is limited to
// [MaxMessageBytes], far below the specification's 128 MiB: this client
// expects short replies and signals only.
//
// It imports the standard library only.
package dbus
