module github.com/statsblob/statsblob

go 1.23.0

require (
	github.com/caio/go-tdigest/v4 v4.1.0
	github.com/stretchr/testify v1.12.1
)

require go.yaml.in/yaml/v3 v3.0.5 // indirect
