package policy

// Hinted is an error that says what to do about it: a command-line value
// refused (*FlagError), a call refused (*Denial), and, in the packages
// above, a policy this machine cannot hold (sandbox.Refusal) and a bad
// command line (cli's usage error). Explain returns what went wrong and the
// way forward apart, for whoever shows them on lines of their own.
type Hinted interface {
	error
	Explain() (msg, hint string)
}

var (
	_ Hinted = (*FlagError)(nil)
	_ Hinted = (*Denial)(nil)
)

// Explain returns the error without its hint, and the hint.
func (e *FlagError) Explain() (msg, hint string) { return e.Error(), e.Hint }

// Explain returns the refusal without its hint, and the hint.
func (d *Denial) Explain() (msg, hint string) { return "refused: " + d.Reason, d.Hint }
