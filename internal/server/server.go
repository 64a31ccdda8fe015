package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nanosandbox/nanosandbox-mcp/internal/policy"
	"github.com/nanosandbox/nanosandbox-mcp/internal/sandbox"
)

// shutdownGrace bounds how long Serve waits for running commands to be
// killed and their results written after stdin ends or a signal arrives.
const shutdownGrace = 3 * time.Second

// progressInterval is how often a call with a progress token hears from us.
const progressInterval = time.Second

// Runner runs one command in the sandbox and reports how it ended, and
// says where it holds less than the policy (for the tool's description),
// as a [*sandbox.Sandbox] does; tests bring their own.
type Runner interface {
	Run(ctx context.Context, c *sandbox.Command) (sandbox.Result, error)
	Caveats() string
}

// handler runs calls of run_command.
type handler struct {
	sb       Runner
	pol      *policy.Policy
	slots    chan struct{} // one per command allowed to run at once
	shutdown context.Context
	running  sync.WaitGroup
	log      *slog.Logger
	audit    *Audit // nil: no --log-file
}

// New returns the MCP server with its one tool. Calls end when ctx does,
// with every running command killed.
func New(ctx context.Context, sb Runner, pol *policy.Policy, version string, log *slog.Logger) (*mcp.Server, *handler) {
	h := &handler{
		sb:       sb,
		pol:      pol,
		slots:    make(chan struct{}, pol.MaxConcurrent),
		shutdown: ctx,
		log:      log,
	}
	s := mcp.NewServer(&mcp.Implementation{Name: "nanosandbox-mcp", Title: "nanosandbox", Version: version}, &mcp.ServerOptions{
		Logger:       log,
		Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{}},
	})
	s.AddTool(tool(pol, sb.Caveats()), h.handle)
	return s, h
}

// Serve speaks MCP over stdin and stdout until stdin ends or ctx is done,
// then kills every running command and waits, briefly, for their results.
// If audit is not nil, every call is recorded there.
func Serve(ctx context.Context, sb Runner, pol *policy.Policy, version string, audit *Audit, stdin io.Reader, stdout, stderr io.Writer) error {
	log := slog.New(quietShutdown{slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn})})
	shutdownCtx, shutdown := context.WithCancel(ctx)
	defer shutdown()
	s, h := New(shutdownCtx, sb, pol, version, log)
	h.audit = audit
	in, out := newFraming(stdin, stdout, log) // the SDK ends the session on a malformed line
	t := &mcp.IOTransport{Reader: io.NopCloser(in), Writer: nopWriteCloser{out}}
	err := s.Run(shutdownCtx, t)
	shutdown()
	h.wait(shutdownGrace)
	if err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, io.EOF) && ctx.Err() == nil {
		return err
	}
	return nil
}

// quietShutdown drops the SDK's "server run cancelled" record: a signal
// asking the server to stop is a normal end, not an error, and clients show
// stderr as the server's log.
type quietShutdown struct{ slog.Handler }

func (q quietShutdown) Handle(ctx context.Context, r slog.Record) error {
	if r.Message == "server run cancelled" {
		return nil
	}
	return q.Handler.Handle(ctx, r)
}

func (q quietShutdown) WithAttrs(as []slog.Attr) slog.Handler {
	return quietShutdown{q.Handler.WithAttrs(as)}
}

func (q quietShutdown) WithGroup(name string) slog.Handler {
	return quietShutdown{q.Handler.WithGroup(name)}
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

// wait waits up to d for every call to finish.
func (h *handler) wait(d time.Duration) {
	done := make(chan struct{})
	go func() {
		h.running.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(d):
	}
}

// handle is the tool handler: it decodes the arguments itself, runs the
// command, and attaches the structured result. A panic comes back as an
// error result; the server goes on.
func (h *handler) handle(ctx context.Context, req *mcp.CallToolRequest) (res *mcp.CallToolResult, err error) {
	h.running.Add(1)
	defer h.running.Done()
	var out runCommandOutput
	defer func() {
		if r := recover(); r != nil {
			h.log.Error("panic in run_command", "panic", r, "stack", string(debug.Stack()))
			res, out = failure(fmt.Sprintf("internal error: %v; the server is still running, try again", r), 0)
		}
		structured, merr := json.Marshal(out)
		if merr != nil {
			res, _ = failure("internal error: "+merr.Error(), 0)
			return
		}
		res.StructuredContent = json.RawMessage(structured)
		err = nil
	}()
	var raw json.RawMessage
	if req.Params != nil {
		raw = req.Params.Arguments
	}
	in, derr := decodeInput(raw)
	if derr != nil {
		res, out = failure(derr.Error(), 0)
		return res, nil
	}
	res, out = h.runCommand(ctx, req, in)
	return res, nil
}

func (h *handler) runCommand(ctx context.Context, req *mcp.CallToolRequest, in runCommandInput) (res *mcp.CallToolResult, out runCommandOutput) {
	// Every call ends when the server shuts down, whatever the client does:
	// the SDK does not cancel running handlers on SIGTERM.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(h.shutdown, cancel)()

	stdin := ""
	if in.Stdin != nil {
		stdin = *in.Stdin
	}
	if err := h.pol.Check(in.Command, in.Args, stdin); err != nil {
		h.audit.Record(AuditEntry{Command: in.Command, Args: in.Args, ExitCode: -1, Error: err.Error()})
		return failure(err.Error(), 0)
	}

	began := time.Now()
	select {
	case h.slots <- struct{}{}:
	case <-ctx.Done():
		return failure("cancelled before it started: the server is shutting down or the call was cancelled", time.Since(began))
	}
	defer func() { <-h.slots }()

	stdout, stderr := newCapture(h.pol.MaxOutputBytes), newCapture(h.pol.MaxOutputBytes)
	cmd := &sandbox.Command{
		Path:    in.Command,
		Args:    in.Args,
		Stdout:  stdout,
		Stderr:  stderr,
		Timeout: h.pol.Timeout,
	}
	if in.Stdin != nil {
		cmd.Stdin = strings.NewReader(*in.Stdin)
	}
	stopProgress := h.progress(ctx, req, stdout, stderr)
	r, runErr := h.sb.Run(ctx, cmd)
	stopProgress()
	res, out = h.result(r, runErr, stdout, stderr)
	if h.audit != nil {
		outBytes, errBytes := stdout.Total(), stderr.Total()
		h.audit.Record(AuditEntry{Command: in.Command, Args: in.Args, ExitCode: out.ExitCode, Signal: out.Signal, TimedOut: out.TimedOut,
			DurationMS: out.DurationMS, StdoutBytes: &outBytes, StderrBytes: &errBytes, Limit: r.Limit, Error: out.Error, Notes: out.Notes})
	}
	return res, out
}

// progress sends a notification about once a second while the command runs,
// if the request asked for progress. It returns the function that stops it.
func (h *handler) progress(ctx context.Context, req *mcp.CallToolRequest, stdout, stderr *capture) func() {
	token := req.Params.GetProgressToken()
	if token == nil || req.Session == nil {
		return func() {}
	}
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		t := time.NewTicker(progressInterval)
		defer t.Stop()
		began := time.Now()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case now := <-t.C:
				elapsed := now.Sub(began).Seconds()
				p := &mcp.ProgressNotificationParams{
					ProgressToken: token,
					Progress:      elapsed,
					Message:       fmt.Sprintf("running for %.0fs; %d bytes of output so far", elapsed, stdout.Total()+stderr.Total()),
				}
				if h.pol.Timeout > 0 {
					p.Total = h.pol.Timeout.Seconds()
				}
				req.Session.NotifyProgress(ctx, p)
			}
		}
	}()
	return func() {
		close(done)
		<-stopped
	}
}

// result maps the sandbox's outcome to the tool result: isError is false
// when the program ran and exited, whatever its status; true when it was
// refused, could not start, timed out, was cancelled or killed by a limit,
// or the sandbox failed. The server's notes end the text block, and are
// in the structured result apart from the output.
func (h *handler) result(r sandbox.Result, runErr error, stdout, stderr *capture) (*mcp.CallToolResult, runCommandOutput) {
	out := runCommandOutput{
		ExitCode:   r.ExitCode,
		Signal:     r.Signal,
		TimedOut:   r.TimedOut,
		DurationMS: r.Duration.Milliseconds(),

		MemoryPeakBytes: r.MemoryPeakBytes,
	}
	out.Stdout, out.StdoutOmittedBytes = stdout.Text()
	out.Stderr, out.StderrOmittedBytes = stderr.Text()

	var first string
	isError := false
	switch {
	case runErr != nil:
		isError = true
		out.ExitCode = -1
		first = runErr.Error()
		var se *sandbox.StartError
		if errors.As(runErr, &se) && se.NotFound {
			first += "; check the name, or run \"sh\" with [\"-c\", \"command -v NAME\"] to search"
		}
	case r.TimedOut:
		isError = true
		first = fmt.Sprintf("timed out after %s; process group killed; partial output follows", h.pol.Timeout)
	case r.Canceled:
		isError = true
		first = "cancelled; process group killed; partial output follows"
	case r.Limit != "" && r.Signal != "":
		isError = true
		first = fmt.Sprintf("killed: %s (%s)", r.Limit, r.Signal)
	case r.Limit != "":
		isError = true
		first = fmt.Sprintf("stopped: %s reached; exit status %d", r.Limit, r.ExitCode)
	case r.Signal != "":
		first = "killed by signal " + r.Signal
	default:
		first = fmt.Sprintf("exit status %d", r.ExitCode)
	}
	if isError {
		out.Error = first
	}

	var b strings.Builder
	b.WriteString(first)
	b.WriteString("\n")
	section := func(label, text string, omitted int64) {
		if text == "" {
			return
		}
		fmt.Fprintf(&b, "--- %s ---\n%s", label, escapeControls(text, false))
		if !strings.HasSuffix(text, "\n") {
			b.WriteString("\n")
		}
	}
	section("stdout", out.Stdout, out.StdoutOmittedBytes)
	section("stderr", out.Stderr, out.StderrOmittedBytes)
	if out.Stdout == "" && out.Stderr == "" && runErr == nil {
		b.WriteString("(no output)\n")
	}
	out.Notes = h.notes(r, runErr, out)
	for _, n := range out.Notes {
		// One line each: a note can quote a name a command chose.
		fmt.Fprintf(&b, "note: %s\n", escapeControls(n, true))
	}
	return &mcp.CallToolResult{
		Content: []mcp.Content{&mcp.TextContent{Text: strings.TrimSuffix(b.String(), "\n")}},
		IsError: isError,
	}, out
}

// notes are the server's own notes on a call, in the order the text block
// ends with them: kept as data where they are made, never read back out of
// the text, where the command's output could imitate them.
func (h *handler) notes(r sandbox.Result, runErr error, out runCommandOutput) []string {
	notes := []string{} // an empty array in the structured result, never null
	if out.StdoutOmittedBytes > 0 || out.StderrOmittedBytes > 0 {
		notes = append(notes, fmt.Sprintf("output is cut to %s per stream (head and tail kept); redirect it to a file in the workspace and read parts of it to see the rest", policy.FormatSize(int64(h.pol.MaxOutputBytes))))
	}
	if r.TimedOut && r.Limit != "" {
		notes = append(notes, fmt.Sprintf("it had reached the %s", r.Limit))
	}
	notes = append(notes, r.Notes...)
	notes = append(notes, h.denialNotes(out.Stdout, out.Stderr, runErr)...)
	for _, s := range []struct{ name, text string }{{"stdout", out.Stdout}, {"stderr", out.Stderr}} {
		if n := binaryNote(s.name, invalidUTF8(s.text)); n != "" {
			notes = append(notes, n)
		}
		if n := controlNote(s.name, controls(s.text)); n != "" {
			notes = append(notes, n)
		}
	}
	// A note may quote what a command chose (a path in its output, a
	// repository's name): its control characters are escaped in the
	// structured notes too, and the text block escapes nothing twice.
	for i, n := range notes {
		notes[i] = escapeControls(n, true)
	}
	return notes
}

// failure is the result of a call that did not run.
func failure(msg string, d time.Duration) (*mcp.CallToolResult, runCommandOutput) {
	return &mcp.CallToolResult{
			Content: []mcp.Content{&mcp.TextContent{Text: msg}},
			IsError: true,
		}, runCommandOutput{
			ExitCode:   -1,
			DurationMS: d.Milliseconds(),
			Error:      msg,
			Notes:      []string{},
		}
}
