module github.com/keyplace/chash/adapters/grpc

go 1.26.0

require (
	github.com/cespare/xxhash/v2 v2.3.0
	github.com/keyplace/chash v0.3.0
	github.com/stretchr/testify v1.11.1
	google.golang.org/grpc v1.85.0
)

require (
	github.com/davecgh/go-spew v1.1.1 // indirect
	github.com/pmezard/go-difflib v1.0.0 // indirect
	golang.org/x/net v0.60.0 // indirect
	golang.org/x/sys v0.48.0 // indirect
	golang.org/x/text v0.42.0 // indirect
	google.golang.org/genproto/googleapis/rpc v0.0.0-20260817212433-ac3dfec99bb1 // indirect
	google.golang.org/protobuf v1.36.12 // indirect
	gopkg.in/yaml.v3 v3.0.1 // indirect
)
