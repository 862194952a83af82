package internal

const (
	headerContentType      = "Content-Type"
	contentTypeProtobuf    = "application/x-protobuf"
	headerOpAMPInstanceUID = "OpAMP-Instance-UID"
)
