module github.com/wardgo/ward/contrib/redis

go 1.26.0

replace github.com/wardgo/ward => ../..

require (
	github.com/redis/go-redis/v9 v9.23.0
	github.com/wardgo/ward v0.0.0-00010101000000-000000000000
)

require (
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	go.uber.org/atomic v1.12.0 // indirect
	golang.org/x/sys v0.48.0 // indirect
)
