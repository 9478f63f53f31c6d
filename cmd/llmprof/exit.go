package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/llmprof/llmprof/internal/driver"
)

// Exit codes, one table for every command (docs/design.md §1).
const (
	ExitOK         = 0
	ExitError      = 1 // I/O error, unusable input
	ExitUsage      = 2 // bad flags or arguments
	ExitRegression = 3 // the gate found a regression
	// ExitRecordFailed: `record` itself failed (its capture could not be
	// written, …); otherwise record exits with its command's status. 125, as
	// timeout(1), env(1) and nohup(1) do for their own failures.
	ExitRecordFailed = 125
)

// UsageError is a mistake in how the command was called.
type UsageError struct{ Err error }

func (e *UsageError) Error() string { return e.Err.Error() }
func (e *UsageError) Unwrap() error { return e.Err }

// usageErrorf returns a UsageError with a formatted message.
func usageErrorf(format string, args ...any) error {
	return &UsageError{fmt.Errorf(format, args...)}
}

// RegressionError means the command ran fine and found a regression; its
// report has already been written.
type RegressionError struct{ Summary string }

func (e *RegressionError) Error() string { return e.Summary }

// ExitCodeError ends the process with Code, printing Msg when it is not
// empty: `record` exits with the exit status of the command it ran.
type ExitCodeError struct {
	Code int
	Msg  string
}

func (e *ExitCodeError) Error() string {
	if e.Msg != "" {
		return e.Msg
	}
	return fmt.Sprintf("exit status %d", e.Code)
}

// exitCode maps an error to the process exit code and prints it. It is the
// only place that decides exit codes.
func exitCode(err error, stderr io.Writer) int {
	if err == nil {
		return ExitOK
	}
	var usage *UsageError
	var option *driver.OptionError
	var regression *RegressionError
	var coded *ExitCodeError
	switch {
	case errors.As(err, &coded):
		if coded.Msg != "" {
			fmt.Fprintln(stderr, "llmprof: "+coded.Msg)
		}
		return coded.Code
	case errors.As(err, &regression):
		fmt.Fprintln(stderr, "llmprof: "+regression.Summary)
		return ExitRegression
	case errors.As(err, &usage):
		fmt.Fprintln(stderr, "llmprof: "+usage.Error())
		fmt.Fprintln(stderr, "Run 'llmprof --help' or 'llmprof <command> --help' for usage.")
		return ExitUsage
	case errors.As(err, &option):
		// The driver's option errors are the caller's mistakes.
		return exitCode(&UsageError{option}, stderr)
	case errors.Is(err, context.Canceled):
		fmt.Fprintln(stderr, "llmprof: interrupted")
		return ExitError
	default:
		fmt.Fprintln(stderr, "llmprof: "+err.Error())
		return ExitError
	}
}
