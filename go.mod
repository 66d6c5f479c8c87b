module github.com/meridian-kv/meridian

go 1.26.8

require (
	github.com/HdrHistogram/hdrhistogram-go v1.4.0
	gonum.org/v1/gonum v0.17.0
	gopkg.in/yaml.v3 v3.0.1
)

require github.com/kr/text v0.2.0 // indirect
