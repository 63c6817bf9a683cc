package benchmarks

import (
	"errors"
	"fmt"
	"time"
)

// Errors the guard reports instead of crashing or hanging the harness.
var (
	ErrPanic = errors.New("panic")
	ErrHang  = errors.New("no answer")
)

// guard runs f in its own goroutine, turning a panic into ErrPanic and a
// call that does not return within d into ErrHang. A hung call is
// abandoned, not stopped: its goroutine lives on.
func guard[T any](d time.Duration, f func() (T, error)) (T, error) {
	type result struct {
		v   T
		err error
	}
	ch := make(chan result, 1)
	go func() {
		defer func() {
			if r := recover(); r != nil {
				ch <- result{err: fmt.Errorf("%w: %v", ErrPanic, r)}
			}
		}()
		v, err := f()
		ch <- result{v, err}
	}()
	select {
	case r := <-ch:
		return r.v, r.err
	case <-time.After(d):
		var zero T
		return zero, fmt.Errorf("%w after %v", ErrHang, d)
	}
}
