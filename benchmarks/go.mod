module github.com/keyplace/chash/benchmarks

go 1.22

replace github.com/keyplace/chash => ../

require (
	github.com/cespare/xxhash/v2 v2.3.0
	github.com/dgryski/go-jump v0.0.0-20170409065014-e1f439676b57
	github.com/dgryski/go-rendezvous v0.0.0-20200823014737-9f7001d12a5f
	github.com/golang/groupcache v0.0.0-20241129210726-2c02b8208cf8
	github.com/keyplace/chash v0.0.0-00010101000000-000000000000
	github.com/kkdai/maglev v0.2.0
	github.com/serialx/hashring v0.0.0-20200727003509-22c0c7ab6b1b
	github.com/stathat/consistent v1.0.0
)

require (
	github.com/davecgh/go-spew v1.1.1 // indirect
	github.com/dchest/siphash v1.2.2 // indirect
	github.com/pmezard/go-difflib v1.0.0 // indirect
	gopkg.in/yaml.v3 v3.0.1 // indirect
)
