module github.com/keyplace/chash/adapters/gomemcache

go 1.22

require (
	github.com/bradfitz/gomemcache v0.0.0-20260422231931-4d751bb6e37c
	github.com/keyplace/chash v0.0.0
)

require github.com/cespare/xxhash/v2 v2.3.0 // indirect

replace github.com/keyplace/chash => ../..
