package policy

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// ParseSize reads a byte size: a number with an optional unit,
// case-insensitive. B is bytes; K, M, G, T and KiB, MiB, GiB, TiB are
// powers of 1024; KB, MB, GB, TB are powers of 1000, as in GNU coreutils
// (head -c 1MB). A limit is a bound, not a price, so the bare letters are
// binary as ulimit, systemd and docker read them; but 4GB means four
// gigabytes, not 4 GiB, whatever the convenience.
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
	mult := 1.0
	switch unit {
	case "", "b":
	case "k", "kib":
		mult = 1 << 10
	case "m", "mib":
		mult = 1 << 20
	case "g", "gib":
		mult = 1 << 30
	case "t", "tib":
		mult = 1 << 40
	case "kb":
		mult = 1e3
	case "mb":
		mult = 1e6
	case "gb":
		mult = 1e9
	case "tb":
		mult = 1e12
	default:
		return 0, fmt.Errorf("%q has an unknown unit %q; use B, KiB, MiB, GiB, TiB (or K, M, G, T: powers of 1024) or KB, MB, GB, TB (powers of 1000)", s, t[i:])
	}
	f, err := strconv.ParseFloat(num, 64)
	if err != nil || f < 0 {
		return 0, fmt.Errorf("%q is not a size; write for example 512KiB, 64M or 2GiB", s)
	}
	v := math.Round(f * mult)
	if v >= 1<<62 {
		return 0, fmt.Errorf("%q is too large", s)
	}
	return int64(v), nil
}

// FormatSize writes n bytes the way ParseSize reads it back: in the
// largest binary unit that keeps it whole; else, for a size given in
// decimal units, in the largest of those that keeps it to one decimal
// exactly (4 GB, 1.5 GB); else in a binary unit with one decimal.
func FormatSize(n int64) string {
	binary := []string{"B", "KiB", "MiB", "GiB", "TiB"}
	i := 0
	v := float64(n)
	for i < len(binary)-1 && v >= 1024 {
		v /= 1024
		i++
	}
	if v == float64(int64(v)) {
		return fmt.Sprintf("%d %s", int64(v), binary[i])
	}
	if n >= 1000 && n%100 == 0 {
		decimal := []string{"KB", "MB", "GB", "TB"}
		for j := len(decimal) - 1; j >= 0; j-- {
			unit := int64(math.Pow(1000, float64(j+1)))
			switch {
			case n < unit:
			case n%unit == 0:
				return fmt.Sprintf("%d %s", n/unit, decimal[j])
			case n%(unit/10) == 0:
				return fmt.Sprintf("%.1f %s", float64(n)/float64(unit), decimal[j])
			}
		}
	}
	return fmt.Sprintf("%.1f %s", v, binary[i])
}
