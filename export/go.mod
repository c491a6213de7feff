module github.com/statsblob/statsblob/export

go 1.26.8

replace github.com/statsblob/statsblob => ../

require (
	github.com/statsblob/statsblob v0.0.0-00010101000000-000000000000
	github.com/stretchr/testify v1.12.1
)

require go.yaml.in/yaml/v3 v3.0.5 // indirect
