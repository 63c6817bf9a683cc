// chash-release: unpublished
// A CI tool (see .ci/install-check.sh), built with GOWORK=off; not a member
// of the workspace in go.work.
module modproxy

go 1.26.0

require golang.org/x/mod v0.42.0
