package member

import (
	"errors"
	"fmt"

	"github.com/keyplace/chash"
)

// Errors reported by the watcher and the sources, wrapped with detail.
// Test for them with errors.Is. A source's own errors wrap these where they
// mean the same thing, so that one check covers every source.
var (
	// ErrBadMember reports a member that is not valid (see Member.Check)
	// or a value a source cannot read as one. The member is skipped and
	// the others are served.
	ErrBadMember = errors.New("member: bad member")
	// ErrNoMembers reports a member set with no member a placer can take:
	// empty, or every member refused. It wraps chash.ErrNoNodes. A watcher
	// keeps serving its last good view; Wait returns it when the first
	// view never came.
	ErrNoMembers = fmt.Errorf("member: no placeable members: %w", chash.ErrNoNodes)
	// ErrRefused reports a member that is valid but that the placer
	// refuses (a weight it cannot honour, unequal weights under jump): it
	// is left out of the view and the others are served. The error also
	// wraps the builder's own, such as chash.ErrInvalidWeight.
	ErrRefused = errors.New("member: refused by the placer")
	// ErrSilent reports a source that said nothing (no snapshot, no
	// confirmation) for longer than the silence bound (WithSilence): the
	// view may be stale. The watcher stops the source's Run and starts it
	// again, which reads afresh.
	ErrSilent = errors.New("member: source silent")
	// ErrBehind reports a snapshot whose version is lower than the one
	// served (a server restored from an old backup): it is not served.
	ErrBehind = errors.New("member: snapshot behind the view served")
	// ErrSpecMismatch reports a placement spec published with the members
	// that differs from the one this process was given (WithSpec).
	ErrSpecMismatch = errors.New("member: published placement spec differs from the local one")
	// ErrNoSpec reports a watcher told to build from the published spec
	// (a nil Builder) when no spec is published and none is given locally.
	ErrNoSpec = errors.New("member: no placement spec")
	// ErrBadSpec reports a placement spec that does not parse or names no
	// valid algorithm or option. It wraps the chash error when there is
	// one (chash.ErrUnknownAlgorithm, chash.ErrInvalidOption).
	ErrBadSpec = errors.New("member: bad placement spec")
	// ErrSeed reports a spec that names a hasher seed which could not be
	// resolved (see WithSeeds and Spec.Builder).
	ErrSeed = errors.New("member: hasher seed not resolved")
	// ErrClosed reports a call on a closed watcher that needs it open.
	ErrClosed = errors.New("member: watcher closed")
)
