package chashgrpc

import "context"

type keyCtx struct{}

// WithKey returns a copy of ctx whose RPCs are routed by key. It takes
// precedence over the configured header, and, unlike the header, reading
// it on the pick path does not allocate.
func WithKey(ctx context.Context, key string) context.Context {
	return context.WithValue(ctx, keyCtx{}, key)
}

// KeyFrom returns the key WithKey put in ctx, and whether there is one.
func KeyFrom(ctx context.Context) (string, bool) {
	k, ok := ctx.Value(keyCtx{}).(string)
	return k, ok
}
