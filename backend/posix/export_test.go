package posix

// LocalFS exposes localFS to the tests.
var LocalFS = localFS
