package policy

import (
	"fmt"
	"strconv"
	"strings"
)

// ParseSize reads a byte size: a number with an optional unit B, K/KB/KiB,
// M/MB/MiB, G/GB/GiB, T/TB/TiB (case-insensitive). Every unit is binary: a
// limit is a bound, not a price, so 1G means 1 GiB.
func ParseSize(s string) (int64, error) {
	t := strings.TrimSpace(s)
	i := 0
	for i < len(t) && (t[i] >= '0' && t[i] <= '9' || t[i] == '.') {
		i++
	}
	num, unit := t[:i], strings.ToLower(strings.TrimSpace(t[i:]))
	if num == "" {
		return 0, fmt.Errorf("%q is not a size; write for example 512KiB, 64M or 2GiB", s)
	}
	var shift uint
	switch unit {
	case "", "b":
	case "k", "kb", "kib":
		shift = 10
	case "m", "mb", "mib":
		shift = 20
	case "g", "gb", "gib":
		shift = 30
	case "t", "tb", "tib":
		shift = 40
	default:
		return 0, fmt.Errorf("%q has an unknown unit %q; use B, KiB, MiB, GiB or TiB", s, t[i:])
	}
	f, err := strconv.ParseFloat(num, 64)
	if err != nil || f < 0 {
		return 0, fmt.Errorf("%q is not a size; write for example 512KiB, 64M or 2GiB", s)
	}
	v := f * float64(uint64(1)<<shift)
	if v >= 1<<62 {
		return 0, fmt.Errorf("%q is too large", s)
	}
	return int64(v), nil
}

// FormatSize writes n bytes the way ParseSize reads it back, in the largest
// binary unit that keeps it whole, else with one decimal.
func FormatSize(n int64) string {
	units := []string{"B", "KiB", "MiB", "GiB", "TiB"}
	i := 0
	v := float64(n)
	for i < len(units)-1 && (v >= 1024) {
		v /= 1024
		i++
	}
	if v == float64(int64(v)) {
		return fmt.Sprintf("%d %s", int64(v), units[i])
	}
	return fmt.Sprintf("%.1f %s", v, units[i])
}
