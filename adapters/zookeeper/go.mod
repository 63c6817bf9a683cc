module github.com/keyplace/chash/adapters/zookeeper

go 1.26.0

require (
	github.com/go-zookeeper/zk v1.0.4
	github.com/keyplace/chash v0.3.0
	github.com/stretchr/testify v1.11.1
)

require (
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/davecgh/go-spew v1.1.1 // indirect
	github.com/pmezard/go-difflib v1.0.0 // indirect
	gopkg.in/yaml.v3 v3.0.1 // indirect
)

