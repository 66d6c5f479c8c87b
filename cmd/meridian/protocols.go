package main

// Every protocol registers itself with the registry when imported.
import _ "github.com/meridian-kv/meridian/protocols/all"
