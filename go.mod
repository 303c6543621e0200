module github.com/wardgo/ward

go 1.26
