package strictjson_test

import (
	"errors"
	"fmt"

	"github.com/weftrun/weft/pkg/strictjson"
)

func ExampleDecode() {
	type retry struct {
		MaxAttempts int32 `json:"maxAttempts"`
	}
	type request struct {
		Name  string  `json:"name"`
		Retry []retry `json:"retry"`
	}
	data := []byte(`{"Name":"a","name":"b","retry":[{"maxAttempts":1},{"maxAttempts":"3"}],"retry":[]}`)
	var req request
	err := strictjson.Decode(data, &req, strictjson.Options{Document: "request body"})
	var se *strictjson.Error
	if errors.As(err, &se) {
		for _, p := range se.Problems {
			fmt.Printf("%s %s: %s\n", p.Code, p.Path, p.Message)
		}
	}
	// Output:
	// unknown_field Name: unknown field "Name"; field names are case-sensitive, did you mean "name"?
	// wrong_type retry[1].maxAttempts: must be a 32-bit integer
	// duplicate_key : key "retry" appears more than once
}

func ExampleValid() {
	fmt.Println(strictjson.Valid([]byte(`{"a":[1,{"b":2}]}`), strictjson.Options{}))
	fmt.Println(strictjson.Valid([]byte(`{"a":[1,{"b":2,"b":3}]}`), strictjson.Options{}))
	fmt.Println(strictjson.Valid([]byte(`[[[]]]`), strictjson.Options{MaxDepth: 2}))
	fmt.Println(strictjson.Valid([]byte(`"\ud800"`), strictjson.Options{}))
	// Output:
	// <nil>
	// a[1]: key "b" appears more than once
	// [0][0]: nested deeper than the limit of 2
	// the \u escape at byte offset 1 is half of a UTF-16 surrogate pair, not a character
}
