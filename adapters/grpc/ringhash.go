package chashgrpc

// The ring_hash mode is the core's chash.NewGRPCRingHash, which places keys
// exactly as grpc-go's ring_hash_experimental for the same endpoints.

// Ring sizes as grpc-go's ring_hash_experimental defaults and caps them
// (its minRingSize and maxRingSize defaults, and GRPC_RING_HASH_CAP's
// default of 4096, which caps both).
const (
	defaultMinRingSize = 1024
	defaultMaxRingSize = 4096
	ringSizeCap        = 4096
)
