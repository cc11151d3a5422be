package main

import "testing"

func TestOnThisMachine(t *testing.T) {
	for url, want := range map[string]bool{
		"postgres://u@127.0.0.1:5432/db":                  true,
		"postgres://u@127.0.0.2/db":                       true,
		"postgres://u@[::1]:5433/db":                      true,
		"postgres://u@localhost/db":                       true,
		"postgres://u@LOCALHOST/db":                       true,
		"postgres:///db?host=/var/run/postgresql":         true,
		"host=/tmp port=5432 dbname=db":                   true,
		"postgres://u@127.0.0.1,localhost/db":             true,
		"postgres://u@db.example.com/db":                  false,
		"postgres://u@10.0.0.5/db":                        false,
		"postgres://u@127.0.0.1,db.example.com/db":        false,
		"mysql://u@127.0.0.1/db":                          false,
		"postgres://u@127.0.0.1/db?sslmode=nonsense-mode": false,
	} {
		if got := onThisMachine(url); got != want {
			t.Errorf("onThisMachine(%q) = %v, want %v", url, got, want)
		}
	}
}
