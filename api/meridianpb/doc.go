// Package meridianpb is the Go code generated from api/meridian/v1/meridian.proto: the
// messages and the gRPC client and server of the Meridian service. Do not edit the .pb.go
// files; regenerate them as api/generate.go describes. Package rpc is the usual way to use it.
package meridianpb
