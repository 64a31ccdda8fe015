package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/nanosandbox/nanosandbox-mcp/internal/policy"
)

// decodeInput reads run_command's arguments strictly, with a refusal the
// model can act on for anything else: unknown arguments, a missing or empty
// command, a value of the wrong type. (The SDK's schema check would refuse
// too, but in words of JSON Schema.) A JSON null counts as absent for the
// optional fields, as some clients send one.
func decodeInput(raw json.RawMessage) (runCommandInput, error) {
	var in runCommandInput
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return in, &policy.Denial{Reason: "no arguments", Hint: `name a program, for example {"command": "ls", "args": ["-la"]}`}
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		return in, &policy.Denial{Reason: "arguments are not a JSON object", Hint: "send an object with command, and optionally args and stdin"}
	}
	if k := duplicateKey(raw); k != "" {
		return in, &policy.Denial{Reason: fmt.Sprintf("argument %q is given twice", k), Hint: "give each of command, args and stdin once: a client that shows one of them would approve another"}
	}
	var unknown []string
	for k := range fields {
		if !slices.Contains(inputKeys, k) {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		quoted := make([]string, len(unknown))
		for i, k := range unknown {
			quoted[i] = fmt.Sprintf("%q", k)
		}
		word := "argument"
		if len(unknown) > 1 {
			word = "arguments"
		}
		return in, &policy.Denial{Reason: "unknown " + word + " " + strings.Join(quoted, ", "), Hint: toolName + " takes only " + wordList(inputKeys) + "; paths, environment and limits are set by whoever started the server"}
	}
	cmd, ok := fields[argCommand]
	if !ok || isNull(cmd) {
		return in, &policy.Denial{Reason: "command is missing", Hint: `name a program, for example {"command": "ls", "args": ["-la"]}`}
	}
	if err := json.Unmarshal(cmd, &in.Command); err != nil {
		return in, &policy.Denial{Reason: "command is not a string", Hint: `name the program as a string; put its arguments in args, for example {"command": "ls", "args": ["-la"]}`}
	}
	if a, ok := fields[argArgs]; ok && !isNull(a) {
		var items []json.RawMessage
		if err := json.Unmarshal(a, &items); err != nil {
			return in, &policy.Denial{Reason: "args is not an array", Hint: `pass each argument as a string in an array, for example "args": ["-la", "src"]`}
		}
		in.Args = make([]string, len(items))
		for i, item := range items {
			if err := json.Unmarshal(item, &in.Args[i]); err != nil || isNull(item) {
				return in, &policy.Denial{Reason: fmt.Sprintf("args[%d] is not a string", i), Hint: `pass every argument as a string, numbers too: "args": ["-n", "5"]`}
			}
		}
	}
	if s, ok := fields[argStdin]; ok && !isNull(s) {
		var v string
		if err := json.Unmarshal(s, &v); err != nil {
			return in, &policy.Denial{Reason: "stdin is not a string", Hint: "pass the text to feed the program as one string"}
		}
		in.Stdin = &v
	}
	return in, nil
}

// duplicateKey returns a key the object raw (valid JSON) holds twice at
// its top, or "". Go's decoder, as most, keeps the last of them.
func duplicateKey(raw json.RawMessage) string {
	d := json.NewDecoder(bytes.NewReader(raw))
	if _, err := d.Token(); err != nil { // {
		return ""
	}
	seen := map[string]bool{}
	for d.More() {
		tok, err := d.Token()
		if err != nil {
			return ""
		}
		k, _ := tok.(string)
		if seen[k] {
			return k
		}
		seen[k] = true
		var skip json.RawMessage
		if d.Decode(&skip) != nil {
			return ""
		}
	}
	return ""
}

func isNull(raw json.RawMessage) bool { return bytes.Equal(bytes.TrimSpace(raw), []byte("null")) }

// wordList joins words as a sentence lists them: "a, b and c".
func wordList(words []string) string {
	if len(words) < 2 {
		return strings.Join(words, "")
	}
	return strings.Join(words[:len(words)-1], ", ") + " and " + words[len(words)-1]
}
