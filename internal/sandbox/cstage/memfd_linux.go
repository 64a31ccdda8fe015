package cstage

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// SealedMemfd returns a close-on-exec memfd holding b, executable, sealed
// against writes, resizes and further seals (and, Linux 6.3+, changes of
// its exec bits).
func SealedMemfd(name string, b []byte) (*os.File, error) {
	const (
		mfdExec   = 0x10 // MFD_EXEC (Linux 6.3+): executable whatever vm.memfd_noexec says, or refused
		fSealExec = 0x20 // F_SEAL_EXEC (Linux 6.3+)
		flags     = unix.MFD_CLOEXEC | unix.MFD_ALLOW_SEALING
		seals     = unix.F_SEAL_WRITE | unix.F_SEAL_SHRINK | unix.F_SEAL_GROW | unix.F_SEAL_SEAL
	)
	fd, err := unix.MemfdCreate(name, flags|mfdExec)
	if errors.Is(err, unix.EINVAL) { // a kernel before 6.3
		fd, err = unix.MemfdCreate(name, flags)
	}
	if err != nil {
		return nil, fmt.Errorf("memfd_create: %w", err)
	}
	f := os.NewFile(uintptr(fd), name)
	if _, err := f.Write(b); err != nil {
		f.Close()
		return nil, fmt.Errorf("write the memfd %s: %w", name, err)
	}
	_, err = unix.FcntlInt(uintptr(fd), unix.F_ADD_SEALS, seals|fSealExec)
	if errors.Is(err, unix.EINVAL) {
		_, err = unix.FcntlInt(uintptr(fd), unix.F_ADD_SEALS, seals)
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("seal the memfd %s: %w", name, err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil || st.Mode&0o111 == 0 || st.Size != int64(len(b)) {
		f.Close()
		return nil, fmt.Errorf("the memfd %s is not executable (vm.memfd_noexec)", name)
	}
	return f, nil
}
