package benchmarks

import (
	"errors"
	"fmt"
	"reflect"

	"github.com/keyplace/chash"
)

var errNoRemove = errors.New("no Remove method")

// removeByReflection calls p.Remove(id) for a placer type whose Remove
// returns its own concrete type: the harness must not need to know every
// type the library will grow.
func removeByReflection(p chash.Placer, id string) (chash.Placer, error) {
	m := reflect.ValueOf(p).MethodByName("Remove")
	if !m.IsValid() {
		return nil, fmt.Errorf("%T: %w", p, errNoRemove)
	}
	out := m.Call([]reflect.Value{reflect.ValueOf(id)})
	if len(out) != 2 {
		return nil, fmt.Errorf("%T: unexpected Remove signature", p)
	}
	if err, _ := out[1].Interface().(error); err != nil {
		return nil, err
	}
	q, ok := out[0].Interface().(chash.Placer)
	if !ok {
		return nil, fmt.Errorf("%T: Remove does not return a Placer", p)
	}
	return q, nil
}
