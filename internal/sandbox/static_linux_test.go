package sandbox

import (
	"debug/elf"
	"testing"
)

// TestIsStatic checks isStatic's answer, from the auxiliary vector, against
// the running binary's program headers: static exactly when it has no
// PT_INTERP.
func TestIsStatic(t *testing.T) {
	f, err := elf.Open("/proc/self/exe")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	want := true
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			want = false
		}
	}
	if got := isStatic(); got != want {
		t.Errorf("isStatic() = %v, want %v (PT_INTERP absent: %v)", got, want, want)
	}
}
