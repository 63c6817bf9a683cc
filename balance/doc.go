// Package balance routes live requests over a chash.Placer while bounding
// each node's share of the requests in flight, and finds and spreads hot
// keys.
//
// Consistent hashing spreads keys, not load: a key that takes 40% of the
// requests lives on one node however many virtual nodes there are. A
// [Balancer] sits between requests and a placer:
//
//   - [WithLoadFactor](c) (default 1.25): bounded loads. A request whose
//     node is at ceil(c × in-flight × w/W) spills to the key's next choice
//     (Mirrokni, Thorup and Zadimoghaddam, SODA 2018; Envoy's and HAProxy's
//     hash balance factor).
//   - [WithChoices](2): the power of two choices. A request goes to the
//     lighter of the key's first two nodes, the first kept unless the
//     second is strictly lighter; combine it with the bound, or use
//     [WithoutLoadBound] to never refuse.
//   - [WithHotKeys](h, maxR): a [HotKeys] detector (a sampled count-min
//     sketch with halving decay, fixed memory, allocation-free) is fed on
//     every acquire, and reads of a key with share s of recent traffic go
//     to the lighter of two of its first R = min(maxR, ⌈s·n⌉) nodes.
//   - [Balancer.Stats]: in-flight per node, acquires served away from the
//     first choice, spills, spread reads, overloads and the current hot
//     keys, cheap enough to publish every second.
//
// An acquire and its release do not allocate; the bound is claimed with a
// compare-and-swap and holds at every acquire under concurrency. A single
// goroutine never gets [ErrOverloaded] while some node has room.
//
// A read of a hot key may land on any of its first R nodes, so all of them
// must hold the current value: writes and invalidations must reach the
// first maxR nodes ([Balancer.AppendReplicas]).
//
// Measured by a simulation (TestHotKeySimulation; CHASH_SIM=long for 1.25 M
// requests a row): 64 nodes, about 16 requests in flight per node, Zipf
// s = 1.1 over 1,000,000 keys, and the same stream with one key at 40% of
// the traffic. Max/mean in flight, mean over time:
//
//	policy                          Zipf   one key at 40%
//	plain                           8.43   25.84
//	bounded c = 1.25                1.29    1.29 (65% served where the key is not)
//	two choices                     3.99   12.83
//	spread, R by heat               2.04    1.85 (0% served where the key is not)
//	spread, R by heat + bounded     1.29    1.29 (20% served where the key is not)
//
// Weights: a node's bound follows the weight its placer reports. This
// module's placers report a weight of 0 as 1; a placer of the caller's may
// report 0 for a draining node, which then takes no new lease but keeps
// its in-flight count until its requests end (the gRPC and HTTP adapters
// use this for backends that are reconnecting or cooling down). A NaN,
// negative or infinite weight counts as 0; if no node has a positive
// weight, every node counts as 1.
//
// A Balancer's counts follow the members of the placer it was given, so
// [New] and [Balancer.SetPlacer] refuse a view whose members change (a
// chash.Holder, a member.Watcher: any placer with a Load method) with
// chash.ErrInvalidOption: give it each placer the view serves with
// SetPlacer, from the view's hook (member.WithViewHook).
package balance
