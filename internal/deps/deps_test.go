package deps

import (
	_ "github.com/rogpeppe/go-internal/testscript"
)
