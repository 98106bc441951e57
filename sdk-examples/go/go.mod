module shapeml.org/sdk-examples/go

go 1.19
