package sandbox

import (
	"bufio"
	"encoding/json"
	"errors"
	"io"

	"github.com/nanosandbox/nanosandbox-mcp/internal/policy"
)

// maxReportBytes bounds one report line. A report repeats at most the
// program's path, which the policy bounds with everything else a call
// brings (policy.MaxArgBytes).
const maxReportBytes = policy.MaxArgBytes + 64<<10

// readReports reads report lines from r until it ends, and returns them
// in order, but for Took reports, for which took is called instead. It
// reads to the end whatever comes, so the writer never blocks: a line that
// is not a report is skipped, and one over maxReportBytes is read and
// dropped.
func readReports(r io.Reader, took func()) []report {
	br := bufio.NewReaderSize(r, 64<<10)
	var rs []report
	var line []byte
	tooLong := false
	for {
		chunk, err := br.ReadSlice('\n')
		if len(line)+len(chunk) > maxReportBytes {
			tooLong, line = true, line[:0]
		} else if !tooLong {
			line = append(line, chunk...)
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue // the rest of this line
		}
		var rep report
		if !tooLong && len(line) > 0 && json.Unmarshal(line, &rep) == nil {
			if rep.Took {
				took()
			} else {
				rs = append(rs, rep)
			}
		}
		line, tooLong = line[:0], false
		if err != nil {
			return rs
		}
	}
}
