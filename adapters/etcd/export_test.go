package etcd

// Hooks for the tests of the defects fixed in the registration and the
// watch (defects_test.go).

// SetTestHookPut sets the function a registration calls between taking
// its value and putting it.
func SetTestHookPut(f func()) { testHookPut = f }

// SetTestHookWatch sets the function a watcher calls right before it
// creates its watch.
func SetTestHookWatch(f func()) { testHookWatch = f }
