// Package gitconfig reads git's config file format, enough for what the
// sandbox needs from it: core.hooksPath and includes (to protect them) and
// user.name and user.email (to pass the caller's identity on). It imports
// the standard library only.
package gitconfig

import (
	"bufio"
	"bytes"
	"strings"
)

// Entry is one "key = value" line. Section and Key are lowercase; the
// subsection keeps its case ([includeIf "gitdir:~/work/"] has section
// "includeif", subsection "gitdir:~/work/").
type Entry struct {
	Section, Subsection, Key, Value string
}

// Name is the entry's full name as git config prints it: section.key, or
// section.subsection.key.
func (e Entry) Name() string {
	if e.Subsection != "" {
		return e.Section + "." + e.Subsection + "." + e.Key
	}
	return e.Section + "." + e.Key
}

// Parse reads every entry of a config file in order. It understands what
// git writes: sections, subsections, quoted values, escapes, comments and
// continuation lines; a malformed line is skipped.
func Parse(b []byte) []Entry {
	var out []Entry
	section, sub := "", ""
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	pending := ""
	for sc.Scan() {
		line := pending + sc.Text()
		pending = ""
		if strings.HasSuffix(line, "\\") && !strings.HasSuffix(line, "\\\\") {
			pending = strings.TrimSuffix(line, "\\")
			continue
		}
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' || line[0] == ';' {
			continue
		}
		if line[0] == '[' {
			end := strings.IndexByte(line, ']')
			if end < 0 {
				continue
			}
			head := strings.TrimSpace(line[1:end])
			name, rest, hasSub := strings.Cut(head, " ")
			section, sub = strings.ToLower(name), ""
			if hasSub {
				sub = strings.Trim(strings.TrimSpace(rest), `"`)
			} else if dot := strings.IndexByte(section, '.'); dot >= 0 {
				section, sub = section[:dot], section[dot+1:] // the legacy [section.sub] form
			}
			line = strings.TrimSpace(line[end+1:])
			if line == "" {
				continue
			}
		}
		key, value, hasValue := strings.Cut(line, "=")
		key = strings.ToLower(strings.TrimSpace(key))
		if key == "" || strings.ContainsAny(key, " \t") {
			continue
		}
		if !hasValue {
			value = "true" // a bare key is a boolean
		} else {
			value = unquote(value)
		}
		out = append(out, Entry{Section: section, Subsection: sub, Key: key, Value: value})
	}
	return out
}

// unquote reads a value: quotes removed, escapes applied, a trailing comment
// dropped.
func unquote(v string) string {
	var b strings.Builder
	quoted := false
	v = strings.TrimSpace(v)
	for i := 0; i < len(v); i++ {
		c := v[i]
		switch {
		case c == '"':
			quoted = !quoted
		case c == '\\' && i+1 < len(v):
			i++
			switch v[i] {
			case 'n':
				b.WriteByte('\n')
			case 't':
				b.WriteByte('\t')
			case 'b':
				b.WriteByte('\b')
			default:
				b.WriteByte(v[i])
			}
		case (c == '#' || c == ';') && !quoted:
			return strings.TrimSpace(b.String())
		default:
			b.WriteByte(c)
		}
	}
	return strings.TrimSpace(b.String())
}

// HasIncludes reports whether entries pull in other files.
func HasIncludes(entries []Entry) bool {
	for _, e := range entries {
		if (e.Section == "include" || e.Section == "includeif") && e.Key == "path" {
			return true
		}
	}
	return false
}
