package scheduler

// This file defines ParseAppData: decoding an app that no file holds.

import "errors"

// ParseAppData is [ParseApp] for an app spec that no file holds, such as the app a component
// returns, encoded as YAML: its problems, and those Build finds later, are reported under name
// with their field paths only, since a line and column in data would point nowhere the user
// can see.
func ParseAppData(name string, data []byte) (*App, error) {
	app, err := ParseApp(name, data)
	if app != nil {
		app.pos = nil
	}
	var serr *SpecError
	if errors.As(err, &serr) {
		for _, fe := range serr.Errors {
			fe.Pos = Position{}
		}
	}
	return app, err
}
