// Package api holds the definition of Meridian's client-facing gRPC API
// (meridian/v1/meridian.proto). The Go code generated from it lives in package meridianpb and is
// committed, so that building and testing never need protoc.
//
// To regenerate after editing the .proto, install protoc (Debian: apt-get install -y
// protobuf-compiler; the committed code was made with libprotoc 3.21.12) and the two plugins
// (go install google.golang.org/protobuf/cmd/protoc-gen-go@latest, then
// go install google.golang.org/grpc/cmd/protoc-gen-go-grpc@latest; committed with v1.36.12 and
// 1.6.2), put ~/go/bin on PATH and run, from the module root:
//
//	go generate ./api
package api

//go:generate protoc --proto_path=. --go_out=. --go_opt=module=github.com/meridian-kv/meridian/api --go-grpc_out=. --go-grpc_opt=module=github.com/meridian-kv/meridian/api meridian/v1/meridian.proto
