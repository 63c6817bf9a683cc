package balance

// SetOverloadHook sets the hook the balancer's spill calls where
// concurrent acquires could take the last room, and returns a function
// that restores the previous one. Tests use it to reach ErrOverloaded
// deterministically.
func SetOverloadHook(f func(stage int)) (restore func()) {
	old := overloadHook
	overloadHook = f
	return func() { overloadHook = old }
}
