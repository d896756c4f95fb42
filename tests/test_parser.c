/* test_parser.c — the .mg frontend (compiler/lexer.c, compiler/parser.c and the type inference
 * in ir/shape.c it reports through), called in-process with mg_parse.
 *
 * Why it exists: the model file is the compiler's user interface, and a diagnostic is only useful
 * if it names the right place. Every error class the frontend can report has a row in one table:
 * a small model text, the 1-based line and column where the offending token starts, and a piece of
 * the message the user must see. Columns count bytes (a tab is one column). The positive cases
 * check the graph a model becomes: names of repeated params, rebinding, literal constants, types.
 *
 * Rows and tests marked "BUG:" assert the correct behaviour where the compiler is currently wrong;
 * they fail until the compiler is fixed.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frontend.h"
#include "plan.h"
#include "testutil.h"

/* Lines 1-4 of most cases; the statement under test is then on line 5. */
/* HDR plus an image batch (line 5) and a conv weight (line 6); the statement is on line 7. */
#define CHDR HDR "input im: f32[2, 3, 8, 8]\n" "param k: f32[4, 3, 3, 3]\n"

/* HDR plus a block on lines 5-9: lin(a, n) = a @ (a [n, 2] param) */
#define DEF HDR "def lin(a, n) {\n" "  param v: f32[n, 2]\n" "  h = a @ v\n" "  return h\n" "}\n"

#define HDR                                                                                        \
    "model m\n"            /* 1 */                                                                 \
    "input x: f32[4, 3]\n" /* 2 */                                                                 \
    "input y: i32[4]\n"    /* 3 */                                                                 \
    "param w: f32[3, 2]\n" /* 4 */

/* ------------------------------------------------------------------------------------------ */
/* Error table                                                                                 */
/* ------------------------------------------------------------------------------------------ */

typedef struct err_case {
    const char *what;   /* shown when the case fails */
    const char *src;
    int line, col;      /* where the offending token starts */
    const char *msg;    /* must occur in the message (or equal it, when exact) */
    const char *notmsg; /* must not occur in the message, or NULL */
    int exact;
} err_case;

static const err_case errors[] = {
    /* --- lexical --- */
    {"bad character", HDR "z = x $ w\n", 5, 7, "unexpected character '$'", NULL, 0},
    {"non-ASCII byte", HDR "z = x \xc3\xa9\n", 5, 7, "unexpected byte 0xc3, a non-ASCII character: names are ASCII", NULL, 0},
    {"byte that begins no UTF-8 character", HDR "z = x \x80\n", 5, 7, "unexpected byte 0x80", "non-ASCII character", 0},
    /* was "unexpected byte 0xff": a UTF-16 file (Windows editors' "Unicode") said nothing of what it is */
    {"UTF-16 LE byte-order mark", "\xFF\xFE" "m", 1, 1,
     "the file is UTF-16 (byte-order mark FF FE at its start); memgrad reads UTF-8", NULL, 0},
    {"UTF-16 BE byte-order mark", "\xFE\xFF", 1, 1,
     "the file is UTF-16 (byte-order mark FE FF at its start); memgrad reads UTF-8", NULL, 0},
    {"UTF-8 byte-order mark past the start", HDR "\xEF\xBB\xBF" "model n\n", 5, 1,
     "a UTF-8 byte-order mark (EF BB BF) here: it may only begin the file", NULL, 0},
    {"malformed number (letter)", "model m\ninput x: f32[4, 3a]\n", 2, 17, "malformed number '3a'", NULL, 0},
    {"malformed number (bare exponent)", HDR "z = x * 1e\n", 5, 9, "malformed number '1e'", NULL, 0},
    /* was a bug: CR was whitespace, so old Mac line ends made the whole file one line */
    {"carriage return alone", "model m\rinput x: f32[4, 3]\r", 1, 8, "carriage return without a newline", NULL, 0},
    {"stray carriage return", HDR "z = x\r @ w\n", 5, 6, "carriage return without a newline", NULL, 0},
    /* an old Mac file that begins with a comment was one comment line ("only comments") */
    {"carriage return in a comment", "# a model\rmodel m\rinput x: f32[4, 3]\r", 1, 10,
     "carriage return without a newline", NULL, 0},
    {"carriage return hiding a line in a comment", HDR "# a two\rmodel evil\r#-layer net\nz = x @ w\n", 5, 8,
     "carriage return without a newline", NULL, 0},

    /* --- syntax --- */
    {"missing ':'", "model m\ninput x f32[4, 3]\n", 2, 9, "expected ':' after the name, got 'f32'", NULL, 0},
    {"missing ']' before '='", "model m\nparam x: f32[4, 3 = he\n", 2, 19,
     "expected ',' or ']' in the shape, got '='", NULL, 0},
    /* inside brackets newlines are joined, so the offending token is the next line's first */
    {"missing ']' at end of line", "model m\ninput x: f32[4, 3\nparam w: f32[3, 2]\n", 3, 1,
     "expected ',' or ']' in the shape, got 'param'", NULL, 0},
    {"missing '[' after dtype", "model m\ninput x: f32 4, 3\n", 2, 14, "expected '[' to start the shape, got '4'",
     NULL, 0},
    /* were accepted, while a call's arguments refuse a comma before ')' */
    {"comma before ']' of a shape", "model m\ninput x: f32[4, 3,]\n", 2, 19,
     "expected a dimension after ',' in the shape, got ']'", NULL, 1},
    {"comma before ']' of a reshape's shape", CHDR "z = reshape(im, shape=[6, -1,])\n", 7, 30,
     "expected a value after ',' in attribute 'shape' of 'reshape', got ']'", NULL, 1},
    {"missing ')' of a call (joined with next line)", HDR "z = relu(x @ w\nl = sum(z)\n", 6, 1,
     "expected ')' to close the argument list, got 'l'", NULL, 0},
    {"missing ')' of a group", HDR "z = (x @ w, 1)\n", 5, 11, "expected ')' to close '(', got ','", NULL, 0},
    {"missing '=' before initializer", HDR "param q: f32[3] zeros\n", 5, 17, "expected end of line, got 'zeros'",
     NULL, 0},
    {"missing '=' in assignment", HDR "z x @ w\n", 5, 1, "expected a statement", NULL, 0},
    {"operator where an operand belongs", HDR "z = x @ @ w\n", 5, 9, "expected an expression, got '@'", NULL, 0},
    {"empty right-hand side", HDR "z = \n", 5, 5, "expected an expression, got end of line", NULL, 0},
    {"stray ')'", HDR "z = x @ w )\n", 5, 11, "expected end of line, got ')'", NULL, 0},
    {"trailing token after model name", "model m extra\n", 1, 9, "expected end of line, got 'extra'", NULL, 0},
    {"model without a name", "model\n", 1, 6, "expected the model's name, got end of line", NULL, 0},
    {"number as a name", "model m\ninput 3: f32[3]\n", 2, 7, "expected an input name, got '3'", NULL, 0},
    {"statement starting with an operator", HDR "+ x\n", 5, 1,
     "expected a statement (model, const, input, param, output, minimize, repeat, def, or NAME = expression), got '+'",
     NULL, 0},
    {"statement that is a bare number", HDR "42\n", 5, 1, "expected a statement", NULL, 0},
    {"unclosed repeat block", HDR "repeat 2 {\n  param q: f32[3]\n", 5, 1,
     "'repeat' block is never closed with '}'", NULL, 0},
    {"stray '}'", HDR "}\n", 5, 1, "'}' without a matching 'repeat N {'", NULL, 0},
    {"stray '}' after a closed repeat", HDR "repeat 2 {\n}\n}\n", 7, 1, "'}' without a matching 'repeat N {'",
     NULL, 0},
    {"repeat count 0", HDR "repeat 0 {\n}\n", 5, 8, "expected a repeat count (a positive integer), got '0'",
     NULL, 0},
    {"a tensor called as a function", HDR "h = relu(x)\nz = h(x)\n", 6, 5, "'h' is a tensor, not a function", NULL, 0},
    {"repeat count 0 - 2", HDR "repeat 0 - 2 {\n}\n", 5, 8, "expected a repeat count (a positive integer), got -2",
     NULL, 0},
    /* a bracket left open in a block joined the rest of the block into one line: the error was
     * "expected end of line" at the statement after the block, or nothing for a block never called */
    {"missing ')' in a def body", HDR "def b(a) {\n  h = relu(a @ w\n  return h\n}\nz = b(x)\n", 6, 11,
     "'(' is never closed (a '}' follows at line 8)", NULL, 0},
    {"missing ')' in a def body never called", HDR "def b(a) {\n  return relu(a\n}\n", 6, 14,
     "'(' is never closed (a '}' follows at line 7)", NULL, 0},
    {"missing ']' in a repeat body", HDR "repeat 2 {\n  param q: f32[3\n}\n", 6, 15,
     "'[' is never closed (a '}' follows at line 7)", NULL, 0},
    {"repeat count not an integer", HDR "repeat 2.5 {\n}\n", 5, 8, "expected a repeat count", NULL, 0},
    {"repeat without '{'", HDR "repeat 2\n{\n}\n", 5, 9, "expected '{' to open the repeated block, got end of line",
     NULL, 0},
    {"'@' between two numbers", HDR "z = 2 @ 3\n", 5, 7, "'@' needs two matrices, got two numbers", NULL, 0},

    /* --- names and functions --- */
    {"unknown name with hint", HDR "z = x @ ww\n", 5, 9, "unknown name 'ww' (did you mean 'w'?)", NULL, 0},
    {"unknown name without hint", HDR "z = x @ qqqqq\n", 5, 9, "unknown name 'qqqqq'", "did you mean", 0},
    {"unknown name hint from an assigned name", HDR "hidden = x @ w\nz = relu(hiden)\n", 6, 10,
     "unknown name 'hiden' (did you mean 'hidden'?)", NULL, 0},
    {"name used before it is bound", HDR "z = relu(h)\nh = x @ w\n", 5, 10, "unknown name 'h'", NULL, 0},
    {"unknown function with hint", HDR "z = rleu(x)\n", 5, 5, "unknown function 'rleu' (did you mean 'relu'?)",
     NULL, 0},
    {"unknown function without hint", HDR "z = frobnicate(x)\n", 5, 5, "unknown function 'frobnicate'; known functions: ",
     "did you mean", 0},
    {"unknown function lists the known ones", HDR "z = frobnicate(x)\n", 5, 5, "cross_entropy", NULL, 0},
    {"too many arguments", HDR "z = relu(x, x)\n", 5, 5, "'relu' takes 1 argument, got 2", NULL, 0},
    {"too few arguments", HDR "l = cross_entropy(x)\n", 5, 5, "'cross_entropy' takes 2 arguments, got 1", NULL, 0},
    {"no arguments", HDR "l = sum()\n", 5, 5, "'sum' takes 1 argument, got 0", NULL, 0},
    {"wrong count in a nested call", HDR "l = sum(relu(x, w))\n", 5, 9, "'relu' takes 1 argument, got 2", NULL, 0},

    /* --- declarations --- */
    {"unknown initializer", HDR "param q: f32[3] = hee\n", 5, 19,
     "unknown initializer 'hee'; expected zeros, ones, he, xavier, normal(STD) or uniform(A)", NULL, 0},
    {"normal without its argument", HDR "param q: f32[3] = normal\n", 5, 25, "expected '(' after 'normal'", NULL, 0},
    {"normal(0)", HDR "param q: f32[3] = normal(0)\n", 5, 26, "expected a positive number, got '0'", NULL, 0},
    /* was a bug: normal(1e39) was accepted and made f32 params of inf (a NaN loss) */
    {"normal(STD) beyond f32", HDR "param q: f32[3] = normal(1e39)\n", 5, 26,
     "normal(1e39) draws values beyond f32's range: the standard deviation is at most 3.96e+37 here", NULL, 0},
    {"uniform(A) beyond f32", HDR "param q: f32[3] = uniform(3.5e38)\n", 5, 27,
     "uniform(3.5e38) draws values beyond f32's range: the bound is at most 3.4e+38 here", NULL, 0},
    {"normal(STD) beyond f64", HDR "param q: f64[3] = normal(1e308)\n", 5, 26,
     "the standard deviation is at most 2.09e+307 here", NULL, 0},
    {"uniform not closed", HDR "param q: f32[3] = uniform(1 2)\n", 5, 29, "expected ')' to close the initializer",
     NULL, 0},
    {"dimension 0", HDR "param q: f32[0, 3]\n", 5, 14, "expected a positive integer dimension, got '0'", NULL, 0},
    {"second dimension 0", HDR "param q: f32[3, 0]\n", 5, 17, "expected a positive integer dimension, got '0'", NULL, 0},
    {"negative dimension", HDR "param q: f32[-1, 3]\n", 5, 14, "expected a positive integer dimension, got '-'", NULL, 0},
    {"fractional dimension", HDR "param q: f32[1.5, 3]\n", 5, 14, "expected a positive integer dimension, got '1.5'",
     NULL, 0},
    {"exponent dimension", HDR "param q: f32[1e3]\n", 5, 14, "expected a positive integer dimension, got '1e3'", NULL, 0},
    {"too many dimensions", HDR "param q: f32[1,1,1,1,1,1,1,1,1]\n", 5, 30, "more than 8 dimensions", NULL, 0},
    {"too many elements", HDR "param q: f32[1048576, 1048576, 2]\n", 5, 32,
     "tensor too large (more than 2^40 elements)", NULL, 0},
    {"unknown dtype", HDR "param q: f16[3]\n", 5, 10, "expected a dtype (f32, f64 or i32), got 'f16'", NULL, 0},
    {"i32 param", HDR "param v: i32[3]\n", 5, 7, "parameter 'v' must be f32 or f64 (it is trained), got i32", NULL, 0},
    {"param declared twice", HDR "param w: f32[3, 2]\n", 5, 7, "duplicate declaration of 'w' (first declared at line 4)",
     NULL, 0},
    {"input declared twice", HDR "input x: f32[3, 2]\n", 5, 7, "duplicate declaration of 'x' (first declared at line 2)",
     NULL, 0},
    {"param reusing an input's name", HDR "param x: f32[3]\n", 5, 7,
     "duplicate declaration of 'x' (first declared at line 2)", NULL, 0},
    {"param declared twice in one repeat body", HDR "repeat 2 {\n  param q: f32[3]\n  param q: f32[3]\n}\n", 7, 9,
     "duplicate declaration of 'q.0' (first declared at line 6)", NULL, 0},

    /* --- model / output / minimize statements --- */
    {"duplicate output (two statements)", HDR "l = sum(x)\noutput l\noutput l\nminimize l\n", 7, 8,
     "'l' is already an output", NULL, 0},
    {"duplicate output (one statement)", HDR "l = sum(x)\noutput l, l\nminimize l\n", 6, 11, "'l' is already an output",
     NULL, 0},
    {"unknown output", HDR "output zz\n", 5, 8, "unknown name 'zz' in output", NULL, 0},
    {"second minimize", HDR "l = sum(x)\nminimize l\nminimize l\n", 7, 1,
     "second 'minimize' statement (the first is at line 6)", NULL, 0},
    {"minimize of two names", HDR "l = sum(x)\nminimize l, l\n", 6, 11, "expected end of line, got ','", NULL, 0},
    {"minimize unknown", HDR "minimize q\n", 5, 10, "unknown name 'q' in minimize", NULL, 0},
    /* were "unknown name 'sum' in minimize", as if sum were no function */
    {"minimize of an expression", HDR "minimize sum(x)\n", 5, 10,
     "minimize takes a name, not an expression: bind the loss first (loss = sum(...)), then 'minimize loss'",
     "unknown name", 0},
    {"output of an expression", HDR "l = sum(x)\noutput l, relu(x)\nminimize l\n", 6, 11,
     "output takes names, not expressions: bind the value first (y = relu(...)), then 'output y'", "unknown name", 0},
    {"second model statement", HDR "model n\n", 5, 1, "second 'model' statement (the model was named at line 1)",
     NULL, 0},
    {"empty file", "", 1, 1, "missing 'model NAME' statement", NULL, 0},
    {"only comments and blank lines", "\n# nothing here\n\n", 1, 1, "missing 'model NAME' statement", NULL, 0},
    {"model not first", "input x: f32[3]\nmodel m\n", 1, 1,
     "expected 'model NAME' as the first statement, got 'input'", NULL, 0},
    {"model not first (after comments)", "# c\n\nparam w: f32[3]\nmodel m\n", 3, 1,
     "expected 'model NAME' as the first statement, got 'param'", NULL, 0},
    /* reported at the end of the file: line 6 is the empty line after the last newline */
    {"missing minimize", HDR "l = sum(x)\n", 6, 1,
     "missing 'minimize NAME': name the scalar loss the training step minimizes", NULL, 0},
    {"missing minimize, no final newline", HDR "l = sum(x)", 5, 11, "missing 'minimize NAME'", NULL, 0},
    {"non-scalar minimize", HDR "minimize x\n", 5, 10,
     "minimize needs a scalar, but 'x' has shape [4,3] (reduce it with sum() or mean())", NULL, 0},
    {"i32 minimize", HDR "input k: i32[]\nminimize k\n", 6, 10, "minimize needs a floating-point scalar, 'k' is i32",
     NULL, 0},
    {"input inside repeat", HDR "repeat 2 {\n  input q: f32[3]\n}\n", 6, 3, "'input' is not allowed inside a repeat block",
     NULL, 0},
    {"output inside repeat", HDR "repeat 2 {\n  output x\n}\n", 6, 3, "'output' is not allowed inside a repeat block",
     NULL, 0},
    {"minimize inside repeat", HDR "l = sum(x)\nrepeat 2 {\n  minimize l\n}\n", 7, 3,
     "'minimize' is not allowed inside a repeat block", NULL, 0},
    {"model inside repeat", HDR "repeat 2 {\n  model q\n}\n", 6, 3, "'model' is not allowed inside a repeat block",
     NULL, 0},
    {"input inside nested repeat", HDR "repeat 2 {\n repeat 2 {\n  input q: f32[3]\n }\n}\n", 7, 3,
     "'input' is not allowed inside a repeat block", NULL, 0},

    /* --- shapes and dtypes (binary-op errors point at the operator, calls at the name) --- */
    {"matmul shape mismatch (exact message)",
     "# A two-layer perceptron\n"
     "model mlp\n"
     "input  x: f32[128, 784]\n"
     "input  y: i32[128]\n"
     "param  w1: f32[784, 256] = he\n"
     "param  b1: f32[256] = zeros\n"
     "param  w2: f32[256, 10] = he\n"
     "param  b2: f32[10] = zeros\n"
     "h = relu(x @ w2 + b1)\n"
     "logits = h @ w2 + b2\n"
     "loss = cross_entropy(logits, y)\n"
     "output logits\n"
     "minimize loss\n",
     9, 12, "matmul shapes [128,784] @ [256,10] do not agree (784 vs 256)", NULL, 1},
    {"matmul of a vector", HDR "param v: f32[3]\nz = x @ v\n", 6, 7, "matmul needs matrices or stacks of matrices (rank 2 or more), got [4,3] @ [3]",
     NULL, 0},
    {"matmul of a scalar literal", HDR "z = x @ 2\n", 5, 7, "matmul needs matrices or stacks of matrices (rank 2 or more), got [4,3] @ []", NULL, 0},
    {"matmul of i32", HDR "input k: i32[3, 2]\nz = x @ k\n", 6, 7, "'matmul' needs a floating-point right operand", NULL, 0},
    {"broadcast mismatch +", HDR "param v: f32[5]\nz = x + v\n", 6, 7, "shapes [4,3] and [5] do not broadcast for 'add'",
     NULL, 0},
    {"broadcast mismatch -", HDR "param v: f32[5]\nz = x - v\n", 6, 7, "shapes [4,3] and [5] do not broadcast for 'sub'",
     NULL, 0},
    {"broadcast mismatch *", HDR "param v: f32[5]\nz = x * v\n", 6, 7, "shapes [4,3] and [5] do not broadcast for 'mul'",
     NULL, 0},
    {"broadcast mismatch /", HDR "param v: f32[5]\nz = x / v\n", 6, 7, "shapes [4,3] and [5] do not broadcast for 'div'",
     NULL, 0},
    {"broadcast mismatch, later operator of a chain", HDR "param v: f32[4]\nz = x * 2 + v\n", 6, 11,
     "shapes [4,3] and [4] do not broadcast for 'add'", NULL, 0},
    {"dtype mismatch f32 + f64", HDR "param v: f64[3]\nz = x + v\n", 6, 7,
     "operands of 'add' have different dtypes f32 and f64", NULL, 0},
    {"i32 operand to relu", HDR "z = relu(y)\n", 5, 5, "'relu' needs a floating-point tensor (f32 or f64), got i32",
     NULL, 0},
    {"i32 left operand to +", HDR "z = y + x\n", 5, 7, "'add' needs a floating-point operand (f32 or f64), got i32",
     NULL, 0},
    {"i32 right operand to +", HDR "z = x + y\n", 5, 7, "'add' needs a floating-point operand (f32 or f64), got i32",
     NULL, 0},
    {"i32 plus a literal", HDR "z = y + 1\n", 5, 7, "'add' needs a floating-point operand", NULL, 0},
    {"negated i32", HDR "z = -y\n", 5, 5, "'neg' needs a floating-point tensor", NULL, 0},
    {"sum of i32", HDR "l = sum(y)\n", 5, 5, "'sum' needs a floating-point tensor (f32 or f64), got i32", NULL, 0},
    {"softmax of a scalar", HDR "l = sum(x)\nz = softmax(l)\n", 6, 5, "softmax needs at least one axis, got a scalar",
     NULL, 0},
    {"cross_entropy with f32 labels", HDR "l = cross_entropy(x, x)\n", 5, 5, "cross_entropy needs i32 class labels, got f32",
     NULL, 0},
    {"cross_entropy labels of the wrong length", HDR "input y2: i32[5]\nl = cross_entropy(x, y2)\n", 6, 5,
     "cross_entropy labels must be [4] to match logits [4,3], got [5]", NULL, 0},
    {"cross_entropy labels of the wrong rank", HDR "input y2: i32[4, 1]\nl = cross_entropy(x, y2)\n", 6, 5,
     "cross_entropy labels must be [4] to match logits [4,3], got [4,1]", NULL, 0},
    /* --- U-Net ops --- */
    {"concat operands that disagree", CHDR "z = concat(im, x, axis=1)\n", 7, 16,
     "concat along axis 1: operand 2 is [4,3], which does not match the first operand [2,3,8,8] on the other axes", NULL, 1},
    {"concat operand 5 that disagrees", CHDR "z = concat(im, im, im, im, k)\n", 7, 28, "operand 5 is [4,3,3,3]", NULL, 0},
    {"concat axis out of range", CHDR "z = concat(im, im, axis=4)\n", 7, 25,
     "attribute 'axis' of 'concat' is 4, out of range for an operand of rank 4 (-4..3)", NULL, 1},
    {"concat of one tensor", HDR "z = concat(x)\n", 5, 5, "'concat' takes at least 2 arguments, got 1", NULL, 1},
    {"concat of 17 tensors", HDR "z = concat(x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x)\n", 5, 60,
     "too many arguments to 'concat' (at most 16)", NULL, 1},
    {"slice start past the axis", HDR "z = slice(x, axis=1, start=3)\n", 5, 28,
     "attribute 'start' of 'slice' is 3, outside axis 1 of [4,3] (length 3)", NULL, 1},
    {"slice start before the axis", HDR "z = slice(x, start=-5)\n", 5, 20,
     "attribute 'start' of 'slice' is -5, outside axis 0 of [4,3] (length 4)", NULL, 1},
    {"empty slice", HDR "z = slice(x, start=2, end=1)\n", 5, 27,
     "attribute 'end' of 'slice' is 1: the slice [2:1] of axis 0 of [4,3] (length 4) is empty", NULL, 1},
    {"slice end past the axis", HDR "z = slice(x, end=5)\n", 5, 18, "the slice [0:5] of axis 0 of [4,3] (length 4) ends past the axis",
     NULL, 0},
    {"slice step 0", HDR "z = slice(x, step=0)\n", 5, 19, "attribute 'step' of 'slice' must be at least 1, got 0", NULL, 1},
    {"slice axis out of range", HDR "z = slice(x, axis=-3)\n", 5, 19,
     "attribute 'axis' of 'slice' is -3, out of range for an operand of rank 2 (-2..1)", NULL, 1},
    {"concat of nothing", HDR "z = concat()\n", 5, 5, "'concat' takes at least 2 arguments, got 0", NULL, 1},
    {"concat of scalars", HDR "input s: f32[]\nz = concat(s, s)\n", 6, 5, "concat axis 0 out of range for []", NULL, 1},
    {"concat of i32", HDR "z = concat(y, y)\n", 5, 5, "'concat' needs a floating-point tensor (f32 or f64), got i32", NULL, 1},
    {"concat of two dtypes", HDR "input x2: f64[4, 3]\nz = concat(x, x2)\n", 6, 5,
     "operands of 'concat' have different dtypes f32 and f64", NULL, 1},
    {"concat of two ranks", HDR "input x3: f32[4, 3, 1]\nz = concat(x, x3)\n", 6, 15,
     "operand 2 is [4,3,1], which does not match the first operand [4,3] on the other axes", NULL, 0},
    {"slice of a scalar", HDR "input s: f32[]\nz = slice(s, start=0, end=1)\n", 6, 5, "slice axis 0 out of range for []", NULL, 1},
    {"slice step negative", HDR "z = slice(x, step=-1)\n", 5, 19, "attribute 'step' of 'slice' must be at least 1, got -1", NULL, 1},
    {"slice end too large", HDR "z = slice(x, end=99999999999)\n", 5, 18,
     "attribute 'end' of 'slice' must be at most 2147483647, got 99999999999", NULL, 1},
    /* start and end are int attributes: an axis past 2^31 - 1 is refused, not truncated */
    {"slice of an axis longer than 2^31", HDR "input big: f32[2, 3000000000]\nz = slice(big, axis=1, start=1)\n", 6, 11,
     "'slice' supports axes of at most 2147483647 elements; axis 1 of [2,3000000000] has 3000000000", NULL, 1},
    {"upsample_nearest of i32", HDR "input yi: i32[1, 1, 2, 2]\nz = upsample_nearest(yi)\n", 6, 5,
     "'upsample_nearest' needs a floating-point input (f32 or f64), got i32", NULL, 1},
    {"upsample_nearest scale negative", CHDR "z = upsample_nearest(im, scale=-2)\n", 7, 32,
     "attribute 'scale' of 'upsample_nearest' must be at least 1, got -2", NULL, 1},
    /* results obey the limits of declared tensors: no int64 overflow in byte counts later */
    {"upsample_nearest result too large", HDR "input big: f32[1, 1, 1000000, 1000000]\nz = upsample_nearest(big, scale=1000000)\n",
     6, 5, "'upsample_nearest' result [1,1,1000000000000,1000000000000] is too large (more than 2^40 elements or a "
     "dimension above 10^12)", NULL, 1},
    {"conv_transpose2d result too large",
     HDR "input big: f32[1, 1, 1000000, 1000000]\nparam k1: f32[1, 1, 1, 1]\nz = conv_transpose2d(big, k1, stride=1048576)\n",
     7, 5, "'conv_transpose2d' result [1,1,1048574951425,1048574951425] is too large", NULL, 0},
    {"conv_transpose2d weight of rank 3", CHDR "param kt: f32[3, 2, 2]\nz = conv_transpose2d(im, kt)\n", 8, 5,
     "conv_transpose2d needs a weight of shape [C_in,C_out/groups,kh,kw], got [3,2,2]", NULL, 1},
    {"conv_transpose2d i32 weight", CHDR "input kt: i32[3, 2, 2, 2]\nz = conv_transpose2d(im, kt)\n", 8, 5,
     "'conv_transpose2d' needs a floating-point weight (f32 or f64), got i32", NULL, 1},
    {"conv_transpose2d weight of another dtype", CHDR "param kt: f64[3, 2, 2, 2]\nz = conv_transpose2d(im, kt)\n", 8, 5,
     "operands of 'conv_transpose2d' have different dtypes f32 and f64", NULL, 1},
    {"conv_transpose2d pad leaves nothing", HDR "input p1: f32[1, 2, 1, 1]\nparam k1: f32[2, 3, 1, 1]\n"
     "z = conv_transpose2d(p1, k1, pad=1)\n", 7, 5, "conv_transpose2d of [1,2,1,1] with a 1x1 kernel and pad=1 leaves no output",
     NULL, 1},
    {"conv_transpose2d dilation 0", CHDR "z = conv_transpose2d(im, k, dilation=0)\n", 7, 38,
     "attribute 'dilation' of 'conv_transpose2d' must be at least 1, got 0", NULL, 1},
    {"cross_entropy float labels", HDR "l = cross_entropy(x, x)\n", 5, 5, "cross_entropy needs i32 class labels, got f32", NULL, 1},
    {"cross_entropy i32 logits", HDR "input yy: i32[4, 3]\nl = cross_entropy(yy, y)\n", 6, 5,
     "'cross_entropy' needs a floating-point logits tensor (f32 or f64), got i32", NULL, 1},
    {"cross_entropy axis negative out of range", HDR "l = cross_entropy(x, y, axis=-3)\n", 5, 30,
     "attribute 'axis' of 'cross_entropy' is -3, out of range for an operand of rank 2 (-2..1)", NULL, 1},
    {"cross_entropy axis not an integer", HDR "l = cross_entropy(x, y, axis=1.0)\n", 5, 30,
     "expected an integer for attribute 'axis' of 'cross_entropy', got '1.0'", NULL, 1},
    {"upsample_nearest of a matrix", HDR "z = upsample_nearest(x)\n", 5, 5,
     "upsample_nearest needs an input of shape [N,C,H,W], got [4,3]", NULL, 1},
    {"upsample_nearest scale 0", CHDR "z = upsample_nearest(im, scale=0)\n", 7, 32,
     "attribute 'scale' of 'upsample_nearest' must be at least 1, got 0", NULL, 1},
    {"conv_transpose2d channels", CHDR "z = conv_transpose2d(im, k)\n", 7, 5,
     "conv_transpose2d weight [4,3,3,3] needs 3 input channels (its first axis) to match the input [2,3,8,8]", NULL, 1},
    {"conv_transpose2d output_pad not below stride", CHDR "param kt: f32[3, 2, 2, 2]\nz = conv_transpose2d(im, kt, stride=2, output_pad=2)\n",
     8, 5, "conv_transpose2d output_pad=2 must be smaller than stride=2", NULL, 1},
    {"conv_transpose2d groups", CHDR "param kt: f32[3, 2, 2, 2]\nz = conv_transpose2d(im, kt, groups=2)\n", 8, 5,
     "conv_transpose2d groups=2 must divide the input channels (3)", NULL, 1},
    {"conv_transpose2d of a matrix", CHDR "z = conv_transpose2d(x, k)\n", 7, 5,
     "conv_transpose2d needs an input of shape [N,C,H,W], got [4,3]", NULL, 1},
    {"conv_transpose2d unknown attribute", CHDR "z = conv_transpose2d(im, k, outpad=1)\n", 7, 29,
     "unknown attribute 'outpad' of 'conv_transpose2d'", NULL, 0},
    {"cross_entropy per-pixel labels with classes last", CHDR "input lab: i32[2, 8, 8]\nl = cross_entropy(im, lab)\n", 8, 5,
     "cross_entropy labels must be [2,3,8] to match logits [2,3,8,8], got [2,8,8]", NULL, 1},
    {"cross_entropy class axis 1 with wrong labels", CHDR "input lab: i32[2, 8]\nl = cross_entropy(im, lab, axis=1)\n", 8, 5,
     "cross_entropy labels must be [2,8,8] to match logits [2,3,8,8] (classes on axis 1), got [2,8]", NULL, 1},
    {"cross_entropy axis out of range", HDR "l = cross_entropy(x, y, axis=2)\n", 5, 30,
     "attribute 'axis' of 'cross_entropy' is 2, out of range for an operand of rank 2 (-2..1)", NULL, 1},
    {"cross_entropy logits of rank 1", HDR "param v: f32[3]\nl = cross_entropy(v, y)\n", 6, 5,
     "cross_entropy needs logits of shape [batch, classes] or [batch, ..., classes], got [3]", NULL, 0},
    {"mse shape mismatch", HDR "param v: f32[3, 4]\nl = mse(x, v)\n", 6, 5, "'mse' needs operands of one shape, got [4,3] and [3,4]",
     NULL, 0},
    {"mse dtype mismatch", HDR "param v: f64[4, 3]\nl = mse(x, v)\n", 6, 5, "operands of 'mse' have different dtypes f32 and f64",
     NULL, 0},

    /* --- attributes of calls --- */
    {"unknown attribute with hint", CHDR "z = conv2d(im, k, strid=2)\n", 7, 19,
     "unknown attribute 'strid' of 'conv2d' (did you mean 'stride'?)", NULL, 0},
    {"unknown attribute lists the known ones", CHDR "z = conv2d(im, k, zzzzzz=2)\n", 7, 19,
     "unknown attribute 'zzzzzz' of 'conv2d'; its attributes are stride, pad, dilation, groups", NULL, 1},
    {"attribute of an op without attributes", HDR "z = relu(x, alpha=2)\n", 5, 13, "'relu' takes no attributes, got 'alpha'",
     NULL, 1},
    {"attribute of the wrong type (fraction)", CHDR "z = conv2d(im, k, stride=1.5)\n", 7, 26,
     "expected an integer for attribute 'stride' of 'conv2d', got '1.5'", NULL, 1},
    {"attribute of the wrong type (tensor)", CHDR "z = conv2d(im, k, pad=x)\n", 7, 23,
     "expected an integer for attribute 'pad' of 'conv2d', got the tensor 'x'", NULL, 1},
    {"attribute of the wrong type (list)", CHDR "z = conv2d(im, k, stride=[1, 2])\n", 7, 26,
     "attribute 'stride' of 'conv2d' must be an integer, got a list", NULL, 1},
    {"attribute out of range", CHDR "z = conv2d(im, k, stride=0)\n", 7, 26,
     "attribute 'stride' of 'conv2d' must be at least 1, got 0", NULL, 1},
    {"attribute out of range (expression)", CHDR "z = conv2d(im, k, pad=1 - 2)\n", 7, 23,
     "attribute 'pad' of 'conv2d' must be at least 0, got -1", NULL, 1},
    {"attribute too large", CHDR "z = conv2d(im, k, dilation=2000000)\n", 7, 28,
     "attribute 'dilation' of 'conv2d' must be at most 1048576, got 2000000", NULL, 1},
    /* (f32 turned them into inf and 0, unsaid: a loss of inf) */
    {"number beyond f32", HDR "z = x * 1e39\n", 5, 9, "the number 1e+39 is out of f32's range (at most 3.4e38)",
     NULL, 1},
    {"number that rounds to 0 in f32", HDR "z = x + 1e-50\n", 5, 9,
     "the number 1e-50 is out of f32's range (it rounds to 0; at least 1.4e-45)", NULL, 1},
    {"folded number beyond f32", HDR "z = 1e20 * 1e20\n", 5, 5,
     "the number 1e+40 is out of f32's range (at most 3.4e38)", NULL, 1},
    {"softmax axis out of range", HDR "z = softmax(x, axis=2)\n", 5, 21,
     "attribute 'axis' of 'softmax' is 2, out of range for an operand of rank 2 (-2..1)", NULL, 1},
    {"log_softmax axis out of range (negative)", HDR "z = log_softmax(x, axis=-3)\n", 5, 25,
     "attribute 'axis' of 'log_softmax' is -3, out of range for an operand of rank 2 (-2..1)", NULL, 1},
    {"gelu approx out of range", HDR "z = gelu(x, approx=2)\n", 5, 20,
     "attribute 'approx' of 'gelu' must be at most 1, got 2", NULL, 1},
    {"layer_norm eps not a number", HDR "param g: f32[3]\nz = layer_norm(x, g, g, eps=x)\n", 6, 29,
     "attribute 'eps' of 'layer_norm' must be a number like 1e-5, got 'x'", NULL, 1},
    {"layer_norm eps negative", HDR "param g: f32[3]\nz = layer_norm(x, g, g, eps=-1e-5)\n", 6, 29,
     "attribute 'eps' of 'layer_norm' must be positive and at most 1, got -1e-05", NULL, 1},
    {"layer_norm eps zero", HDR "param g: f32[3]\nz = layer_norm(x, g, g, eps=0)\n", 6, 29,
     "attribute 'eps' of 'layer_norm' must be positive and at most 1, got 0", NULL, 1},
    {"layer_norm scale of the wrong shape", HDR "param g: f32[4]\nparam b: f32[3]\nz = layer_norm(x, g, b)\n", 7, 5,
     "layer_norm scale must be [3] to match the input's last axis [4,3], got [4]", NULL, 1},
    {"layer_norm shift of the wrong shape", HDR "param g: f32[3]\nparam b: f32[1, 3]\nz = layer_norm(x, g, b)\n", 7, 5,
     "layer_norm shift must be [3] to match the input's last axis [4,3], got [1,3]", NULL, 1},
    {"batch_norm of rank 3", HDR "param t: f32[2,3,4]\nparam g: f32[3]\nz = batch_norm(t, g, g)\n", 7, 5,
     "batch_norm needs an input of shape [N,C] or [N,C,H,W], got [2,3,4]", NULL, 1},
    {"batch_norm scale of the wrong shape", CHDR "param g: f32[4]\nparam b: f32[3]\nz = batch_norm(im, g, b)\n", 9, 5,
     "batch_norm scale must be [3] to match the channels of the input [2,3,8,8], got [4]", NULL, 1},
    {"batch_norm shift of the wrong shape", CHDR "param g: f32[3]\nz = batch_norm(im, g, x)\n", 8, 5,
     "batch_norm shift must be [3] to match the channels of the input [2,3,8,8], got [4,3]", NULL, 1},
    {"batch_norm one value per channel", HDR "param g: f32[3]\nparam t: f32[1,3]\nz = batch_norm(t, g, g)\n", 7, 5,
     "batch_norm needs more than one value per channel in training, got input [1,3]", NULL, 1},
    {"batch_norm momentum above 1", HDR "param g: f32[3]\nz = batch_norm(x, g, g, momentum=1.5)\n", 6, 34,
     "attribute 'momentum' of 'batch_norm' must be positive and at most 1, got 1.5", NULL, 1},
    {"batch_norm on i32", HDR "param g: f32[4]\nz = batch_norm(y, g, g)\n", 6, 5,
     "'batch_norm' needs a floating-point input (f32 or f64), got i32", NULL, 1},
    {"dropout p of 1", HDR "z = dropout(x, p=1)\n", 5, 18, "attribute 'p' of 'dropout' must be positive and below 1, got 1",
     NULL, 1},
    {"dropout p of 0", HDR "z = dropout(x, p=0)\n", 5, 18, "attribute 'p' of 'dropout' must be positive and below 1, got 0",
     NULL, 1},
    {"dropout p negative", HDR "z = dropout(x, p=-1)\n", 5, 18,
     "attribute 'p' of 'dropout' must be positive and below 1, got -1", NULL, 1},
    {"dropout seed too large", HDR "z = dropout(x, seed=99999999999)\n", 5, 21,
     "attribute 'seed' of 'dropout' must be at most 1048576, got 99999999999", NULL, 1},
    {"dropout of two tensors", HDR "z = dropout(x, x)\n", 5, 5, "'dropout' takes 1 argument, got 2", NULL, 1},
    {"batch_norm over a scalar", HDR "input s: f32[]\nparam g: f32[1]\nz = batch_norm(s, g, g)\n", 7, 5,
     "batch_norm needs an input of shape [N,C] or [N,C,H,W], got []", NULL, 1},
    {"batch_norm momentum 0", HDR "param g: f32[3]\nz = batch_norm(x, g, g, momentum=0)\n", 6, 34,
     "attribute 'momentum' of 'batch_norm' must be positive and at most 1, got 0", NULL, 1},
    {"batch_norm momentum negative", HDR "param g: f32[3]\nz = batch_norm(x, g, g, momentum=-0.1)\n", 6, 34,
     "attribute 'momentum' of 'batch_norm' must be positive and at most 1, got -0.1", NULL, 1},
    {"batch_norm momentum a list", HDR "param g: f32[3]\nz = batch_norm(x, g, g, momentum=[1])\n", 6, 34,
     "attribute 'momentum' of 'batch_norm' must be a number like 1e-5, got '['", NULL, 1},
    {"batch_norm eps infinite", HDR "param g: f32[3]\nz = batch_norm(x, g, g, eps=1e999)\n", 6, 29,
     "number '1e999' is out of range", NULL, 1}, /* the lexer refuses a literal that overflows to inf */
    {"batch_norm scale of another dtype", HDR "param g: f64[3]\nparam b: f32[3]\nz = batch_norm(x, g, b)\n", 7, 5,
     "operands of 'batch_norm' have different dtypes f32 and f64", NULL, 1},
    {"batch_norm of two tensors", HDR "param g: f32[3]\nz = batch_norm(x, g)\n", 6, 5, "'batch_norm' takes 3 arguments, got 2",
     NULL, 1},
    {"dropout unknown attribute", HDR "z = dropout(x, rate=0.1)\n", 5, 16,
     "unknown attribute 'rate' of 'dropout'; its attributes are p, seed", NULL, 1},
    {"dropout seed negative", HDR "z = dropout(x, seed=-2)\n", 5, 21,
     "attribute 'seed' of 'dropout' must be at least 0, got -2", NULL, 1},
    {"dropout on i32", HDR "z = dropout(y)\n", 5, 5, "'dropout' needs a floating-point tensor (f32 or f64), got i32", NULL, 1},
    {"batched matmul batch axes", HDR "param a: f32[2, 4, 3]\nparam b: f32[3, 3, 2]\nz = a @ b\n", 7, 7,
     "matmul batch axes of [2,4,3] @ [3,3,2] do not broadcast", NULL, 1},
    {"batched matmul inner axes", HDR "param a: f32[2, 4, 3]\nparam b: f32[2, 4, 2]\nz = a @ b\n", 7, 7,
     "matmul shapes [2,4,3] @ [2,4,2] do not agree (3 vs 4)", NULL, 1},
    {"transpose without perm", HDR "z = transpose(x)\n", 5, 5,
     "'transpose' needs the attribute 'perm' (e.g. transpose(x, perm=[0, 2, 1, 3]))", NULL, 1},
    {"transpose perm too short", HDR "z = transpose(x, perm=[0])\n", 5, 23,
     "transpose perm has 1 entries but the operand [4,3] has 2 axes", NULL, 1},
    /* at the entry (they were at the list's '[') */
    {"transpose perm repeats an axis", HDR "z = transpose(x, perm=[1, 1])\n", 5, 27,
     "transpose perm must list each axis 0..1 (or -2..-1) once; axis 1 is repeated", NULL, 1},
    {"transpose perm names a missing axis", HDR "z = transpose(x, perm=[0, 2])\n", 5, 27,
     "transpose perm must list each axis 0..1 (or -2..-1) once; axis 2 does not exist", NULL, 1},
    /* negative entries count from the end (perm=[-1, 0] was refused) */
    {"transpose perm negative, repeated", HDR "z = transpose(x, perm=[-1, 1])\n", 5, 28,
     "transpose perm must list each axis 0..1 (or -2..-1) once; axis 1 is repeated", NULL, 1},
    {"transpose perm negative, repeats an earlier one", HDR "z = transpose(x, perm=[1, -1])\n", 5, 27,
     "transpose perm must list each axis 0..1 (or -2..-1) once; axis -1 (that is, axis 1) is repeated", NULL, 1},
    {"transpose perm negative, missing", HDR "z = transpose(x, perm=[-3, 0])\n", 5, 24,
     "transpose perm must list each axis 0..1 (or -2..-1) once; axis -3 does not exist", NULL, 1},
    {"transpose perm beyond any rank", HDR "z = transpose(x, perm=[-9, 0])\n", 5, 24,
     "attribute 'perm' of 'transpose' lists axes, numbered from 0 to at most 7 (or from the end, -1 to -8), got -9",
     NULL, 1},
    {"transpose perm not a list", HDR "z = transpose(x, perm=1)\n", 5, 23,
     "attribute 'perm' of 'transpose' must be a list of integers like [0, 2, 1, 3], got '1'", NULL, 1},
    {"cross_entropy sequence labels of the wrong shape", HDR "input s: f32[2, 5, 3]\ninput l: i32[2, 3]\n"
     "z = cross_entropy(s, l)\n", 7, 5, "cross_entropy labels must be [2,5] to match logits [2,5,3], got [2,3]", NULL, 1},
    {"embedding of float ids", HDR "param t: f32[10, 4]\nz = embedding(x, t)\n", 6, 5,
     "embedding needs i32 ids as its first argument, got f32", NULL, 1},
    {"embedding table of rank 1", HDR "param t: f32[10]\nz = embedding(y, t)\n", 6, 5,
     "embedding needs a table of shape [vocabulary, dim], got [10]", NULL, 1},
    {"required attribute missing", CHDR "z = max_pool2d(im)\n", 7, 5,
     "'max_pool2d' needs the attribute 'kernel' (e.g. max_pool2d(x, kernel=2))", NULL, 1},
    {"attribute given twice", CHDR "z = max_pool2d(im, kernel=2, kernel=3)\n", 7, 30,
     "attribute 'kernel' of 'max_pool2d' given twice", NULL, 1},
    {"positional argument after an attribute", CHDR "z = conv2d(im, stride=2, k)\n", 7, 26,
     "positional argument after an attribute in the call of 'conv2d'", NULL, 0},
    {"attribute name that is not a name", CHDR "z = conv2d(im, k, 2=2)\n", 7, 20,
     "expected ')' to close the argument list, got '='", NULL, 1},

    /* --- convolution, pooling and reshape shapes --- */
    {"conv2d channel mismatch", CHDR "param k2: f32[4, 2, 3, 3]\nz = conv2d(im, k2)\n", 8, 5,
     "conv2d weight [4,2,3,3] needs 3 input channels per group (input [2,3,8,8], groups=1), got 2", NULL, 1},
    {"conv2d groups not dividing the channels", CHDR "z = conv2d(im, k, groups=2)\n", 7, 5,
     "conv2d groups=2 must divide the input channels (3) and the output channels (4)", NULL, 1},
    {"conv2d kernel larger than the input", CHDR "param k3: f32[4, 3, 9, 9]\nz = conv2d(im, k3)\n", 8, 5,
     "conv2d kernel 9x9 (dilation 1) does not fit the input [2,3,8,8] padded by 0", NULL, 1},
    {"conv2d dilated kernel too large", CHDR "z = conv2d(im, k, dilation=4)\n", 7, 5,
     "conv2d kernel 3x3 (dilation 4) does not fit the input [2,3,8,8] padded by 0", NULL, 1},
    {"conv2d of a matrix", CHDR "z = conv2d(x, k)\n", 7, 5, "conv2d needs an input of shape [N,C,H,W], got [4,3]", NULL, 1},
    {"conv2d with a matrix weight", CHDR "z = conv2d(im, w)\n", 7, 5,
     "conv2d needs a weight of shape [C_out,C_in/groups,kh,kw], got [3,2]", NULL, 1},
    {"conv2d dtype mismatch", CHDR "param k4: f64[4, 3, 3, 3]\nz = conv2d(im, k4)\n", 8, 5,
     "operands of 'conv2d' have different dtypes f32 and f64", NULL, 1},
    {"max_pool2d pad more than half the kernel", CHDR "z = max_pool2d(im, kernel=2, pad=2)\n", 7, 5,
     "max_pool2d pad=2 is more than half the kernel (2)", NULL, 1},
    {"avg_pool2d window larger than the input", CHDR "z = avg_pool2d(im, kernel=9)\n", 7, 5,
     "avg_pool2d kernel 9 does not fit the input [2,3,8,8] padded by 0", NULL, 1},
    {"max_pool2d of a matrix", CHDR "z = max_pool2d(x, kernel=2)\n", 7, 5,
     "max_pool2d needs an input of shape [N,C,H,W], got [4,3]", NULL, 1},
    {"global_avg_pool of a matrix", CHDR "z = global_avg_pool(x)\n", 7, 5,
     "global_avg_pool needs an input of shape [N,C,H,W], got [4,3]", NULL, 1},
    {"reshape with -1 that does not divide", CHDR "z = reshape(im, shape=[5, -1])\n", 7, 23,
     "cannot reshape [2,3,8,8] (384 elements) to a shape with 5 elements per -1 entry", NULL, 0},
    {"reshape to another element count", CHDR "z = reshape(im, shape=[5, 5])\n", 7, 5,
     "cannot reshape [2,3,8,8] (384 elements) to [5,5] (25 elements)", NULL, 1},
    {"reshape with two -1", CHDR "z = reshape(im, shape=[-1, -1])\n", 7, 28,
     "attribute 'shape' of 'reshape' may contain -1 (the inferred dimension) only once", NULL, 1},
    {"reshape with a zero dimension", CHDR "z = reshape(im, shape=[0, -1])\n", 7, 24,
     "attribute 'shape' of 'reshape' needs positive dimensions (or one -1), got 0", NULL, 1},
    {"reshape without a shape", CHDR "z = reshape(im)\n", 7, 5,
     "'reshape' needs the attribute 'shape' (e.g. reshape(x, shape=[128, -1]))", NULL, 1},
    {"reshape with a number for a shape", CHDR "z = reshape(im, shape=3)\n", 7, 23,
     "attribute 'shape' of 'reshape' must be a list of integers like [128, -1], got '3'", NULL, 1},
    {"flatten of a vector", HDR "param v: f32[3]\nz = flatten(v)\n", 6, 5, "flatten needs at least two axes [N, ...], got [3]",
     NULL, 1},

    /* --- named constants --- */
    {"unknown constant in a shape", HDR "param q: f32[D, 3]\n", 5, 14,
     "unknown constant 'D' in a dimension (define it with 'const D = ...')", NULL, 1},
    {"unknown constant with hint", HDR "const DIM = 4\nparam q: f32[DIMM]\n", 6, 14,
     "unknown constant 'DIMM' in a dimension (did you mean 'DIM'?)", NULL, 1},
    {"tensor used as a dimension", HDR "param q: f32[x]\n", 5, 14, "expected an integer for a dimension, got the tensor 'x'",
     NULL, 1},
    {"constant defined twice", HDR "const D = 1\nconst D = 2\n", 6, 7, "constant 'D' is already defined (at line 5)", NULL, 1},
    {"constant named like a tensor", HDR "const x = 1\n", 5, 7, "'x' already names a tensor (bound at line 2)", NULL, 1},
    {"tensor named like a constant", HDR "const D = 2\nD = x @ w\n", 6, 1,
     "'D' is a constant (defined at line 5); choose another name", NULL, 1},
    {"param named like a constant", HDR "const D = 2\nparam D: f32[3]\n", 6, 7,
     "'D' is a constant (defined at line 5); choose another name", NULL, 1},
    {"fractional constant", HDR "const D = 2.5\n", 5, 11, "expected an integer for constant 'D', got '2.5'", NULL, 1},
    {"constant divided by zero", HDR "const D = 4 / (2 - 2)\n", 5, 13, "division by zero in constant 'D'", NULL, 1},
    {"constant overflowing", HDR "const D = 100000000 * 100000000\n", 5, 21, "integer value too large in constant 'D'",
     NULL, 0},
    {"constant without '='", HDR "const D 3\n", 5, 9, "expected '=' after the constant's name, got '3'", NULL, 1},
    /* beyond 2^53 each says the limit of what it reads: they all said "(at most 2^53)" */
    {"dimension beyond 2^53", "model m\ninput x: f32[4, 99999999999999999]\n", 2, 17,
     "99999999999999999 is too large for a dimension (at most 10^12)", NULL, 1},
    {"dimension expression beyond 2^53", "model m\ninput x: f32[4, 100000000 * 100000000]\n", 2, 27,
     "integer value too large in a dimension (at most 10^12)", NULL, 1},
    {"reshape dimension beyond 2^53", HDR "z = reshape(x, shape=[-1, 10000000000000000])\n", 5, 27,
     "10000000000000000 is too large for attribute 'shape' of 'reshape' (at most 10^12)", NULL, 1},
    {"attribute beyond 2^53", CHDR "z = conv2d(im, k, stride=99999999999999999999)\n", 7, 26,
     "99999999999999999999 is too large for attribute 'stride' of 'conv2d' (at most 1048576)", NULL, 1},
    {"repeat count beyond 2^53", HDR "repeat 10000000000000000 {\n}\n", 5, 8,
     "10000000000000000 is too large for a repeat count (at most 1000000)", NULL, 1},
    {"constant beyond 2^53", HDR "const D = 10000000000000000\n", 5, 11,
     "10000000000000000 is too large for constant 'D' (at most 2^53)", NULL, 1},
    {"dimension expression that is not positive", HDR "const D = 2\nparam q: f32[D - 2]\n", 6, 14,
     "expected a positive integer dimension, got 0", NULL, 1},
    {"dimension expression with a bad operand", HDR "const D = 2\nparam q: f32[D * 1.5]\n", 6, 18,
     "expected an integer for a dimension, got '1.5'", NULL, 1},
    {"repeat count from a constant that is 0", HDR "const N = 0\nrepeat N {\n}\n", 6, 8,
     "expected a repeat count (a positive integer), got 0", NULL, 1},
    {"const inside repeat", HDR "repeat 2 {\n  const D = 1\n}\n", 6, 3, "'const' is not allowed inside a repeat block",
     NULL, 1},

    /* --- def blocks (DEF is lines 5-9; calls from line 10) --- */
    {"def called with too few arguments", DEF "z = lin(x)\n", 10, 5, "'lin' takes 2 arguments (a, n), got 1", NULL, 1},
    {"def called with too many arguments", DEF "z = lin(x, 2, 3)\n", 10, 5, "'lin' takes 2 arguments (a, n), got 3",
     NULL, 1},
    {"unknown block with hint", DEF "z = lim(x, 2)\n", 10, 5, "unknown function 'lim' (did you mean 'lin'?)", NULL, 1},
    {"block called before it is defined", HDR "z = lin(x, 2)\n", 5, 5, "unknown function 'lin'", NULL, 0},
    {"recursive block", HDR "def f(a) {\n  return f(a)\n}\nz = f(x)\n", 6, 10,
     "recursive call of 'f' (a def block may not call itself, directly or through other blocks) (in 'f' called at line 8)",
     NULL, 1},
    {"mutually recursive blocks", HDR "def f(a) {\n  return g(a)\n}\ndef g(a) {\n  return f(a)\n}\nz = f(x)\n", 9, 10,
     "recursive call of 'f'", NULL, 0},
    {"error in a block names the call", DEF "z = lin(x, 5)\n", 7, 9,
     "matmul shapes [4,3] @ [5,2] do not agree (3 vs 5) (in 'lin' called at line 10)", NULL, 1},
    {"error in the second call of a block", DEF "z = lin(x, 3)\nq = lin(z, 3)\n", 7, 9,
     "matmul shapes [4,2] @ [3,2] do not agree (2 vs 3) (in 'lin' called at line 11)", NULL, 1},
    {"fractional integer argument", DEF "z = lin(x, 2.5)\n", 10, 12, "argument 'n' of 'lin' must be a tensor or an integer, got 2.5",
     NULL, 1},
    {"attribute-style argument to a block", DEF "z = lin(x, n=3)\n", 10, 12,
     "'lin' is a def block: its arguments are positional, not attributes", NULL, 1},
    {"block without return", HDR "def f(a) {\n  b = a\n}\nz = f(x)\n", 7, 1, "'f' ends without 'return VALUE' (in 'f' called at line 8)",
     NULL, 1},
    {"statement after return", HDR "def f(a) {\n  return a\n  b = a\n}\nz = f(x)\n", 7, 3,
     "statement after 'return' in 'f' (return comes last)", NULL, 0},
    {"return outside a block", HDR "return x\n", 5, 1, "'return' outside a def block", NULL, 1},
    {"return inside a repeat of a block", HDR "def f(a) {\n  repeat 2 {\n    return a\n  }\n}\nz = f(x)\n", 7, 5,
     "'return' inside a repeat block", NULL, 0},
    {"block named like a built-in", HDR "def relu(a) {\n  return a\n}\n", 5, 5,
     "'relu' is a built-in function; choose another name for the block", NULL, 1},
    {"block defined twice", DEF "def lin(a) {\n  return a\n}\n", 10, 5, "def block 'lin' is already defined (at line 5)", NULL, 1},
    {"argument named twice", HDR "def f(a, a) {\n  return a\n}\n", 5, 10, "argument 'a' of 'f' named twice", NULL, 1},
    {"block never closed", HDR "def f(a) {\n  return a\n", 5, 1, "'def' block is never closed with '}'", NULL, 1},
    {"block without braces", HDR "def f(a)\n  return a\n", 5, 9, "expected '{' to open the block's body", NULL, 0},
    {"input inside a block", HDR "def f(a) {\n  input q: f32[3]\n  return a\n}\nz = f(x)\n", 6, 3,
     "'input' is not allowed inside a def block", NULL, 0},
    {"def inside a block", HDR "def f(a) {\n  def g(b) {\n  }\n  return a\n}\nz = f(x)\n", 6, 3,
     "'def' is not allowed inside a def block", NULL, 0},
    {"def inside a repeat", HDR "repeat 2 {\n  def g(b) {\n  }\n}\n", 6, 3, "'def' is not allowed inside a repeat block", NULL, 1},
    {"block argument named like a constant", HDR "const n = 3\ndef f(n) {\n  return n\n}\nz = f(x)\n", 6, 7,
     "parameter 'n' of 'f' has the name of the constant defined at line 5", NULL, 0},
    {"caller's integer argument not visible in a nested block",
     HDR "def g(a) {\n  param q: f32[n]\n  return a\n}\ndef f(a, n) {\n  return g(a)\n}\nz = f(x, 3)\n", 6, 16,
     "unknown constant 'n' in a dimension (define it with 'const n = ...') (in 'g' called at line 10) (in 'f' called at line 12)",
     NULL, 1},
    {"global tensor not visible in a block", HDR "def f(a) {\n  return a @ w\n}\nz = f(x)\n", 6, 14, "unknown name 'w'", NULL, 0},

    /* --- positions in harder places --- */
    {"error inside nested parentheses", HDR "z = relu((x @ w) + qq)\n", 5, 20, "unknown name 'qq'", NULL, 0},
    {"error on the continuation line of a call", HDR "z = relu(x @\n         qq)\n", 6, 10, "unknown name 'qq'", NULL, 0},
    {"operator on a continuation line", HDR "param v: f32[5]\nz = sum(x\n        + v)\n", 7, 9,
     "shapes [4,3] and [5] do not broadcast for 'add'", NULL, 0},
    {"tab counts as one column", HDR "\tz = x @ qq\n", 5, 10, "unknown name 'qq'", NULL, 0},
    {"CRLF line endings", "model m\r\ninput x: f32[4, 3]\r\nz = x @ qq\r\n", 3, 9, "unknown name 'qq'", NULL, 0},
    {"after a comment line", HDR "# a comment with $ and @ in it\nz = x @ qq   # trailing\n", 6, 9, "unknown name 'qq'", NULL, 0},
    /* x:[4,3] @ a:[3,4] is fine on the first pass; on the second h is [4,4] */
    {"shape error on the second repeat iteration",
     HDR "param a: f32[3, 4]\nh = x\nrepeat 2 {\n  h = h @ a\n}\n", 8, 9, "matmul shapes [4,4] @ [3,4] do not agree (4 vs 3)",
     NULL, 0},
    {"error in a nested repeat body", HDR "repeat 2 {\n  repeat 2 {\n    z = x @ qq\n  }\n}\n", 7, 13, "unknown name 'qq'",
     NULL, 0},
};

enum { NERRORS = sizeof errors / sizeof errors[0] };

START_TEST(test_error_table)
{
    const err_case *c = &errors[_i];
    const char *file = "case.mg";
    mg_graph *g = (mg_graph *)&g; /* non-NULL sentinel: mg_parse must clear it */
    mg_diag d;
    memset(&d, 0, sizeof d);
    mg_status st = mg_parse(file, c->src, strlen(c->src), &g, &d);
    ck_assert_msg(st == MG_ERR, "[%s] parsed without error:\n%s", c->what, c->src);
    ck_assert_msg(g == NULL, "[%s] the graph was not cleared on error", c->what);
    ck_assert_msg(d.loc.file && !strcmp(d.loc.file, file), "[%s] diagnostic file is '%s', expected '%s'", c->what,
                  d.loc.file ? d.loc.file : "(null)", file);
    ck_assert_msg(d.loc.line == c->line && d.loc.col == c->col, "[%s] error at %d:%d, expected %d:%d (message: %s)",
                  c->what, d.loc.line, d.loc.col, c->line, c->col, d.msg);
    if (c->exact)
        ck_assert_msg(!strcmp(d.msg, c->msg), "[%s] message\n  '%s'\nexpected exactly\n  '%s'", c->what, d.msg, c->msg);
    else
        ck_assert_msg(strstr(d.msg, c->msg) != NULL, "[%s] message\n  '%s'\ndoes not contain\n  '%s'", c->what, d.msg,
                      c->msg);
    if (c->notmsg)
        ck_assert_msg(strstr(d.msg, c->notmsg) == NULL, "[%s] message '%s' should not contain '%s'", c->what, d.msg,
                      c->notmsg);
}
END_TEST

/* The file name in a diagnostic is the caller's string, valid after the graph is freed. */
START_TEST(test_error_file_is_callers)
{
    char file[] = "some/dir/model.mg";
    mg_graph *g;
    mg_diag d = {0};
    const char *src = HDR "z = x @ qq\n";
    ck_assert_int_eq(mg_parse(file, src, strlen(src), &g, &d), MG_ERR);
    ck_assert_ptr_eq(d.loc.file, file);
}
END_TEST

/* The parser takes a length, not a NUL-terminated string: text past len is not read. */
START_TEST(test_length_is_respected)
{
    const char *src = HDR "l = sum(x)\nminimize l\n$$$ garbage past the end";
    size_t len = strlen(HDR "l = sum(x)\nminimize l\n");
    mg_graph *g = NULL;
    mg_diag d = {0};
    ck_assert_msg(mg_parse("t.mg", src, len, &g, &d) == MG_OK, "%d:%d: %s", d.loc.line, d.loc.col, d.msg);
    mg_graph_free(g);
}
END_TEST

/* ------------------------------------------------------------------------------------------ */
/* BUG reproducers: the compiler is wrong here today; these assert the correct behaviour.      */
/* ------------------------------------------------------------------------------------------ */

static mg_diag parse_fail(const char *src)
{
    mg_graph *g = NULL;
    mg_diag d;
    memset(&d, 0, sizeof d);
    mg_status st = mg_parse("bug.mg", src, strlen(src), &g, &d);
    mg_graph_free(g);
    ck_assert_msg(st == MG_ERR, "parsed without error:\n%s", src);
    return d;
}

static int says_too_large(const char *msg)
{
    return strstr(msg, "too large") || strstr(msg, "at most") || strstr(msg, "maximum") || strstr(msg, "exceeds");
}

/* Was a bug: a dimension above 10^12 is a positive integer, but the message claims it is not
 * ("expected a positive integer dimension, got '2000000000000'"). It should say it is too large. */
START_TEST(test_fixed_huge_dimension_message)
{
    mg_diag d = parse_fail("model m\ninput x: f32[2000000000000]\n");
    ck_assert_int_eq(d.loc.line, 2);
    ck_assert_int_eq(d.loc.col, 14);
    ck_assert_msg(says_too_large(d.msg), "message for an oversized dimension is misleading: '%s'", d.msg);
}
END_TEST

/* Was a bug: a repeat count above 10^6 is refused with "expected a repeat count (a positive integer),
 * got '2000000'", which is a positive integer. The message should name the limit. */
START_TEST(test_fixed_huge_repeat_count_message)
{
    mg_diag d = parse_fail(HDR "repeat 2000000 {\n}\n");
    ck_assert_int_eq(d.loc.line, 5);
    ck_assert_int_eq(d.loc.col, 8);
    ck_assert_msg(says_too_large(d.msg) || strstr(d.msg, "1000000"),
                  "message for an oversized repeat count is misleading: '%s'", d.msg);
}
END_TEST

/* Was a bug: a file of comments and blank lines is not empty, but the message says "(the file is empty)". */
START_TEST(test_fixed_comment_only_file_message)
{
    mg_diag d = parse_fail("# a model will go here\n\n# later\n");
    ck_assert_msg(strstr(d.msg, "missing 'model NAME'") != NULL, "%s", d.msg);
    ck_assert_msg(strstr(d.msg, "file is empty") == NULL, "comment-only file reported as empty: '%s'", d.msg);
}
END_TEST

/* ------------------------------------------------------------------------------------------ */
/* Positive cases                                                                              */
/* ------------------------------------------------------------------------------------------ */

static mg_graph *parse_ok(const char *src)
{
    mg_graph *g = NULL;
    mg_diag d;
    memset(&d, 0, sizeof d);
    mg_status st = mg_parse("ok.mg", src, strlen(src), &g, &d);
    ck_assert_msg(st == MG_OK, "unexpected error %d:%d: %s\nin:\n%s", d.loc.line, d.loc.col, d.msg, src);
    ck_assert_ptr_nonnull(g);
    return g;
}

static const mg_node *param_node(const mg_graph *g, int i) { return &g->nodes[g->params[i]]; }

/* The node bound to an output name. */
static const mg_node *output_node(const mg_graph *g, const char *name)
{
    for (int i = 0; i < g->noutputs; i++)
        if (!strcmp(g->outputs[i].name, name)) return &g->nodes[g->outputs[i].node];
    ck_abort_msg("no output named %s", name);
    return NULL;
}

static void assert_type(const mg_node *n, mg_dtype dt, int rank, const int64_t *dims, const char *what)
{
    char got[128];
    ck_assert_msg(n->type.dtype == dt, "%s: dtype %s, expected %s", what, mg_dtype_name(n->type.dtype), mg_dtype_name(dt));
    ck_assert_msg(n->type.shape.rank == rank, "%s: shape %s, expected rank %d", what,
                  mg_shape_str(&n->type.shape, got, sizeof got), rank);
    for (int i = 0; i < rank; i++)
        ck_assert_msg(n->type.shape.dim[i] == dims[i], "%s: shape %s, dim %d expected %lld", what,
                      mg_shape_str(&n->type.shape, got, sizeof got), i, (long long)dims[i]);
}
#define TYPE(n, dt, what, ...)                                                                     \
    do {                                                                                           \
        const int64_t dims_[] = {0, __VA_ARGS__};                                                  \
        assert_type((n), (dt), (int)(sizeof dims_ / sizeof dims_[0]) - 1, dims_ + 1, (what));      \
    } while (0)

/* Labels are sliced like any tensor (the micro-batching rewrite slices them per part, and a
 * model may take some of its labels): slice of i32 is i32 (it was refused as not a float). */
START_TEST(test_slice_of_labels)
{
    mg_graph *g = parse_ok(HDR "yy = slice(y, start=1, end=3)\nloss = cross_entropy(slice(x @ w, start=1, end=3), yy)\n"
                               "output yy\nminimize loss\n");
    TYPE(output_node(g, "yy"), MG_I32, "yy", 2);
    mg_graph_free(g);
}
END_TEST

START_TEST(test_example_mlp_parses)
{
    char *src = tu_read(MG_SOURCE_DIR "/examples/mlp.mg");
    ck_assert_msg(src != NULL, "cannot read %s", MG_SOURCE_DIR "/examples/mlp.mg");
    mg_graph *g = parse_ok(src);
    ck_assert_str_eq(g->model_name, "mlp");
    ck_assert_int_eq(g->ninputs, 2);
    ck_assert_str_eq(g->nodes[g->inputs[0]].name, "x");
    ck_assert_str_eq(g->nodes[g->inputs[1]].name, "y");
    TYPE(&g->nodes[g->inputs[0]], MG_F32, "x", 128, 784);
    TYPE(&g->nodes[g->inputs[1]], MG_I32, "y", 128);
    ck_assert_int_eq(g->nparams, 4);
    const char *pn[] = {"w1", "b1", "w2", "b2"};
    for (int i = 0; i < 4; i++) {
        ck_assert_str_eq(param_node(g, i)->name, pn[i]);
        ck_assert_int_eq(param_node(g, i)->op, MG_OP_PARAM);
        ck_assert_int_eq(param_node(g, i)->index, i);
    }
    TYPE(param_node(g, 0), MG_F32, "w1", 784, 256);
    TYPE(param_node(g, 1), MG_F32, "b1", 256);
    ck_assert_int_eq(param_node(g, 0)->init, MG_INIT_HE);
    ck_assert_int_eq(param_node(g, 1)->init, MG_INIT_ZEROS);
    ck_assert_int_eq(g->noutputs, 1);
    const mg_node *logits = output_node(g, "logits");
    ck_assert_int_eq(logits->op, MG_OP_ADD);
    TYPE(logits, MG_F32, "logits", 128, 10);
    ck_assert_int_ge(g->loss, 0);
    const mg_node *loss = &g->nodes[g->loss];
    ck_assert_int_eq(loss->op, MG_OP_CROSS_ENTROPY);
    TYPE(loss, MG_F32, "loss");
    ck_assert_str_eq(loss->name, "loss");
    ck_assert_int_eq(loss->loc.line, 11);
    /* the relu producing h is the input of the second matmul */
    const mg_node *mm2 = &g->nodes[logits->in[0]];
    ck_assert_int_eq(mm2->op, MG_OP_MATMUL);
    const mg_node *h = &g->nodes[mm2->in[0]];
    ck_assert_int_eq(h->op, MG_OP_RELU);
    ck_assert_str_eq(h->name, "h");
    TYPE(h, MG_F32, "h", 128, 256);
    ck_assert_int_eq(g->nforward, g->n);
    ck_assert_int_eq(g->n, 12); /* 6 leaves, 2 matmul, 2 add, relu, cross_entropy */
    mg_graph_free(g);
    free(src);
}
END_TEST

START_TEST(test_repeat_names_params)
{
    mg_graph *g = parse_ok("model m\n"
                           "input x: f32[8, 4]\n"
                           "h = x\n"
                           "repeat 3 {\n"
                           "  param w: f32[4, 4] = xavier\n"
                           "  param b: f32[4]\n"
                           "  h = relu(h @ w + b)\n"
                           "}\n"
                           "l = mean(h)\n"
                           "minimize l\n");
    ck_assert_int_eq(g->nparams, 6);
    const char *names[] = {"w.0", "b.0", "w.1", "b.1", "w.2", "b.2"};
    for (int i = 0; i < 6; i++) {
        ck_assert_str_eq(param_node(g, i)->name, names[i]);
        ck_assert_int_eq(param_node(g, i)->loc.line, i % 2 ? 6 : 5);
    }
    ck_assert_int_eq(param_node(g, 0)->init, MG_INIT_XAVIER);
    ck_assert_int_eq(param_node(g, 1)->init, MG_INIT_ZEROS);
    /* each iteration uses its own w: walk the chain back from the loss */
    const mg_node *n = &g->nodes[g->nodes[g->loss].in[0]];
    for (int it = 2; it >= 0; it--) {
        ck_assert_int_eq(n->op, MG_OP_RELU);
        const mg_node *add = &g->nodes[n->in[0]];
        ck_assert_int_eq(add->op, MG_OP_ADD);
        const mg_node *mm = &g->nodes[add->in[0]];
        ck_assert_int_eq(mm->op, MG_OP_MATMUL);
        ck_assert_str_eq(g->nodes[mm->in[1]].name, names[2 * it]);
        ck_assert_str_eq(g->nodes[add->in[1]].name, names[2 * it + 1]);
        n = &g->nodes[mm->in[0]];
    }
    ck_assert_int_eq(n->op, MG_OP_INPUT); /* the chain starts at x */
    mg_graph_free(g);
}
END_TEST

START_TEST(test_nested_repeat_names)
{
    mg_graph *g = parse_ok("model m\n"
                           "input x: f32[2, 3]\n"
                           "param w: f32[3, 3]\n" /* a top-level w next to the repeated ones */
                           "h = x @ w\n"
                           "repeat 2 {\n"
                           "  param s: f32[3]\n"
                           "  repeat 3 {\n"
                           "    param w: f32[3, 3]\n"
                           "    h = tanh(h @ w)\n"
                           "  }\n"
                           "  h = h * s\n"
                           "}\n"
                           "l = sum(h)\n"
                           "minimize l\n");
    const char *names[] = {"w", "s.0", "w.0.0", "w.0.1", "w.0.2", "s.1", "w.1.0", "w.1.1", "w.1.2"};
    ck_assert_int_eq(g->nparams, 9);
    for (int i = 0; i < 9; i++) ck_assert_str_eq(param_node(g, i)->name, names[i]);
    /* h after the outer block is h * s of the last iteration */
    const mg_node *mul = &g->nodes[g->nodes[g->loss].in[0]];
    ck_assert_int_eq(mul->op, MG_OP_MUL);
    ck_assert_str_eq(g->nodes[mul->in[1]].name, "s.1");
    mg_graph_free(g);
}
END_TEST

/* Declaring a param once inside a repeat declares it once per iteration; that is no duplicate. */
START_TEST(test_param_in_repeat_is_not_duplicate)
{
    mg_graph *g = parse_ok(HDR "repeat 2 {\n  param q: f32[3]\n}\nrepeat 2 { param r: f32[2] }\nparam v: f32[2]\n"
                               "l = sum(x)\nminimize l\n");
    ck_assert_int_eq(g->nparams, 6);
    const char *names[] = {"w", "q.0", "q.1", "r.0", "r.1", "v"}; /* no suffix once the blocks end */
    for (int i = 0; i < 6; i++) ck_assert_str_eq(param_node(g, i)->name, names[i]);
    mg_graph_free(g);
}
END_TEST

START_TEST(test_rebinding)
{
    mg_graph *g = parse_ok("model m\n"
                           "input x: f32[2, 4]\n"
                           "param w: f32[4, 4]\n"
                           "h = x\n"
                           "output h\n" /* the output keeps the node h had here */
                           "h = relu(h @ w)\n"
                           "h = relu(h @ w)\n"
                           "output w\n"
                           "l = sum(h)\n"
                           "minimize l\n");
    ck_assert_int_eq(g->noutputs, 2);
    ck_assert_int_eq(output_node(g, "h")->op, MG_OP_INPUT);
    ck_assert_int_eq(output_node(g, "w")->op, MG_OP_PARAM);
    const mg_node *r2 = &g->nodes[g->nodes[g->loss].in[0]];
    ck_assert_int_eq(r2->op, MG_OP_RELU);
    const mg_node *m2 = &g->nodes[r2->in[0]];
    ck_assert_int_eq(m2->op, MG_OP_MATMUL);
    const mg_node *r1 = &g->nodes[m2->in[0]];
    ck_assert_int_eq(r1->op, MG_OP_RELU);
    ck_assert_int_eq(r1->loc.line, 6);
    ck_assert_int_eq(r2->loc.line, 7);
    ck_assert_int_eq(m2->in[1], g->params[0]);
    ck_assert_int_eq(g->nodes[g->nodes[r1->in[0]].in[0]].op, MG_OP_INPUT);
    mg_graph_free(g);
}
END_TEST

START_TEST(test_comments_blank_lines_and_continuations)
{
    mg_graph *g = parse_ok("\n"
                           "# leading comment\n"
                           "   \t\n"
                           "model m   # the name\n"
                           "\n"
                           "input x: f32[\n"
                           "    4,\n"
                           "    3]\n"
                           "param w: f32[3, 2] = normal(0.02)  # small\n"
                           "# a comment between statements\n"
                           "z = relu(\n"
                           "    x @ w    # a comment inside the parentheses\n"
                           "    + 1\n"
                           ")\n"
                           "l = mean((z\n"
                           "          * z))\n"
                           "\n"
                           "minimize l\n"
                           "# trailing comment without newline");
    TYPE(&g->nodes[g->inputs[0]], MG_F32, "x", 4, 3);
    ck_assert_int_eq(param_node(g, 0)->init, MG_INIT_NORMAL);
    ck_assert_double_eq_tol(param_node(g, 0)->init_arg, 0.02, 1e-15);
    const mg_node *loss = &g->nodes[g->loss];
    ck_assert_int_eq(loss->op, MG_OP_MEAN);
    ck_assert_int_eq(loss->loc.line, 15);
    const mg_node *sq = &g->nodes[loss->in[0]];
    ck_assert_int_eq(sq->op, MG_OP_MUL);
    ck_assert_int_eq(sq->loc.line, 16); /* the '*' is on the continuation line */
    ck_assert_int_eq(sq->loc.col, 11);
    TYPE(sq, MG_F32, "z*z", 4, 2);
    mg_graph_free(g);
}
END_TEST

START_TEST(test_crlf_and_no_final_newline)
{
    mg_graph *g = parse_ok("# a comment\r\nmodel m\r\ninput x: f32[3]\r\nl = sum(x) # the loss\r\nminimize l");
    ck_assert_str_eq(g->model_name, "m");
    ck_assert_int_eq(g->nodes[g->loss].op, MG_OP_SUM);
    mg_graph_free(g);
}
END_TEST

/* 2 * x - 1: literals become scalar constants of the other operand's dtype. */
START_TEST(test_literal_constants)
{
    mg_graph *g = parse_ok("model m\n"
                           "input x: f32[4, 3]\n"
                           "input d: f64[5]\n"
                           "z = 2 * x - 1\n"
                           "e = 0.5 - d / 4e1\n"
                           "l = sum(z) * (1 + 2)\n"
                           "n = -2 * x\n"
                           "output e, n\n"
                           "minimize l\n");
    /* l = mul(sum(z), const 3): (1 + 2) folds to one constant */
    const mg_node *l = &g->nodes[g->loss];
    ck_assert_int_eq(l->op, MG_OP_MUL);
    const mg_node *three = &g->nodes[l->in[1]];
    ck_assert_int_eq(three->op, MG_OP_CONST);
    ck_assert_double_eq(three->fattr, 3.0);
    TYPE(three, MG_F32, "3");
    /* z = sub(mul(const 2, x), const 1) */
    const mg_node *z = &g->nodes[g->nodes[l->in[0]].in[0]];
    ck_assert_str_eq(z->name, "z");
    ck_assert_int_eq(z->op, MG_OP_SUB);
    TYPE(z, MG_F32, "z", 4, 3);
    const mg_node *mul = &g->nodes[z->in[0]], *one = &g->nodes[z->in[1]];
    ck_assert_int_eq(mul->op, MG_OP_MUL);
    ck_assert_int_eq(one->op, MG_OP_CONST);
    ck_assert_double_eq(one->fattr, 1.0);
    TYPE(one, MG_F32, "1");
    const mg_node *two = &g->nodes[mul->in[0]];
    ck_assert_int_eq(two->op, MG_OP_CONST);
    ck_assert_double_eq(two->fattr, 2.0);
    TYPE(two, MG_F32, "2");
    ck_assert_int_eq(g->nodes[mul->in[1]].op, MG_OP_INPUT);
    /* e = 0.5 - d / 40, with f64 constants because d is f64 */
    const mg_node *e = output_node(g, "e");
    ck_assert_int_eq(e->op, MG_OP_SUB);
    TYPE(e, MG_F64, "e", 5);
    const mg_node *half = &g->nodes[e->in[0]];
    ck_assert_int_eq(half->op, MG_OP_CONST);
    ck_assert_double_eq(half->fattr, 0.5);
    TYPE(half, MG_F64, "0.5");
    const mg_node *div = &g->nodes[e->in[1]];
    ck_assert_int_eq(div->op, MG_OP_DIV);
    ck_assert_double_eq(g->nodes[div->in[1]].fattr, 40.0);
    TYPE(&g->nodes[div->in[1]], MG_F64, "4e1");
    /* -2 * x: the minus folds into the literal */
    const mg_node *n = output_node(g, "n");
    ck_assert_int_eq(n->op, MG_OP_MUL);
    ck_assert_int_eq(g->nodes[n->in[0]].op, MG_OP_CONST);
    ck_assert_double_eq(g->nodes[n->in[0]].fattr, -2.0);
    mg_graph_free(g);
}
END_TEST

START_TEST(test_node_types)
{
    mg_graph *g = parse_ok("model m\n"
                           "input x: f64[8, 5]\n"
                           "input y: i32[8]\n"
                           "input t: f64[8, 3]\n"
                           "param w: f64[5, 3]\n"
                           "param b: f64[3] = ones\n"
                           "param s: f64[] = uniform(0.5)\n"
                           "param c: f64[8, 1]\n"
                           "a = x @ w\n"
                           "p = a + b\n"
                           "q = p * c\n"
                           "r = softmax(q)\n"
                           "u = sigmoid(exp(log(tanh(r))))\n"
                           "e = cross_entropy(q, y)\n"
                           "m = mse(u, t)\n"
                           "l = e + m * s\n"
                           "output a, p, q, r, u, e, m\n"
                           "minimize l\n");
    TYPE(output_node(g, "a"), MG_F64, "x @ w", 8, 3);
    TYPE(output_node(g, "p"), MG_F64, "a + b (broadcast [3])", 8, 3);
    TYPE(output_node(g, "q"), MG_F64, "p * c (broadcast [8,1])", 8, 3);
    TYPE(output_node(g, "r"), MG_F64, "softmax", 8, 3);
    TYPE(output_node(g, "u"), MG_F64, "elementwise chain", 8, 3);
    TYPE(output_node(g, "e"), MG_F64, "cross_entropy");
    TYPE(output_node(g, "m"), MG_F64, "mse");
    TYPE(&g->nodes[g->loss], MG_F64, "loss");
    ck_assert_int_eq(output_node(g, "u")->op, MG_OP_SIGMOID);
    ck_assert_int_eq(param_node(g, 1)->init, MG_INIT_ONES);
    ck_assert_int_eq(param_node(g, 2)->init, MG_INIT_UNIFORM);
    ck_assert_double_eq(param_node(g, 2)->init_arg, 0.5);
    TYPE(param_node(g, 2), MG_F64, "scalar param");
    ck_assert_int_eq(param_node(g, 0)->init, MG_INIT_HE); /* the default for matrices */
    mg_graph_free(g);
}
END_TEST

/* Nodes remember where they came from (later passes report errors at these places). */
START_TEST(test_positions_recorded_on_nodes)
{
    mg_graph *g = parse_ok(HDR "z = relu(x @ w)\nl = sum(z)\nminimize l\n");
    const mg_node *l = &g->nodes[g->loss], *z = &g->nodes[l->in[0]], *mm = &g->nodes[z->in[0]];
    ck_assert_int_eq(l->loc.line, 6);
    ck_assert_int_eq(l->loc.col, 5);
    ck_assert_int_eq(z->loc.line, 5);
    ck_assert_int_eq(z->loc.col, 5);
    ck_assert_int_eq(mm->loc.line, 5);
    ck_assert_int_eq(mm->loc.col, 12);
    ck_assert_int_eq(param_node(g, 0)->loc.line, 4);
    ck_assert_int_eq(param_node(g, 0)->loc.col, 7);
    mg_graph_free(g);
}
END_TEST


/* Named constants in shapes, repeat counts, attributes and expressions; attributes of calls. */
START_TEST(test_constants_and_attributes)
{
    mg_graph *g = parse_ok("model m\n"
                           "const B = 2\n"
                           "const C = 3\n"
                           "const K = C\n"
                           "const HALF = (C * 4 + 1) / 2\n" /* 13 / 2 = 6 */
                           "input x: f32[B, C, HALF + 2, 8]\n"
                           "param w: f32[0 + 2 * C, -1 + C / K + 1, K, K]\n" /* (a literal 0 or a '-' first
                                                                                 was refused as written) */
                           "z = conv2d(x, w, stride=K - 1, pad=1, dilation=1, groups=C)\n"
                           "p = max_pool2d(z, kernel=2)\n"
                           "a = avg_pool2d(z, kernel=3, stride=1, pad=1)\n"
                           "r = reshape(p, shape=[B, -1])\n"
                           "f = flatten(a)\n"
                           "h = x\n"
                           "repeat 0 + B * 2 - 1 {\n"
                           "  h = h * C\n"
                           "}\n"
                           "l = sum(r) + mean(f) + sum(h) + sum(global_avg_pool(z))\n"
                           "output z, p, a, r, f, h\n"
                           "minimize l\n");
    const mg_node *x = &g->nodes[g->inputs[0]];
    TYPE(x, MG_F32, "x", 2, 3, 8, 8);
    TYPE(param_node(g, 0), MG_F32, "w", 6, 1, 3, 3);
    const mg_node *z = output_node(g, "z");
    ck_assert_int_eq(z->op, MG_OP_CONV2D);
    ck_assert_int_eq(z->iattr[0], 2); /* stride */
    ck_assert_int_eq(z->iattr[1], 1); /* pad */
    ck_assert_int_eq(z->iattr[2], 1); /* dilation */
    ck_assert_int_eq(z->iattr[3], 3); /* groups */
    TYPE(z, MG_F32, "z", 2, 6, 4, 4);
    const mg_node *p = output_node(g, "p");
    ck_assert_int_eq(p->iattr[0], 2);
    ck_assert_int_eq(p->iattr[1], 2); /* stride defaults to the kernel */
    ck_assert_int_eq(p->iattr[2], 0);
    TYPE(p, MG_F32, "p", 2, 6, 2, 2);
    TYPE(output_node(g, "a"), MG_F32, "a", 2, 6, 4, 4);
    TYPE(output_node(g, "r"), MG_F32, "r", 2, 24);
    TYPE(output_node(g, "f"), MG_F32, "f", 2, 96);
    /* repeat 3: h = ((x * 3) * 3) * 3 */
    const mg_node *h = output_node(g, "h");
    int n = 0;
    while (h->op == MG_OP_MUL) {
        ck_assert_double_eq(g->nodes[h->in[1]].fattr, 3.0);
        h = &g->nodes[h->in[0]];
        n++;
    }
    ck_assert_int_eq(n, 3);
    mg_graph_free(g);
}
END_TEST

/* def blocks: arguments (tensors and integers), params named per call, nesting, repeat inside
 * and around calls, a call inside an expression. */
START_TEST(test_def_blocks)
{
    mg_graph *g = parse_ok("model m\n"
                           "const B = 2\n"
                           "input x: f32[B, 3, 8, 8]\n"
                           "def conv(x, c_in, c_out) {\n"
                           "  param w: f32[c_out, c_in, 3, 3]\n"
                           "  param b: f32[c_out, 1, 1] = zeros\n"
                           "  return relu(conv2d(x, w, pad=1) + b)\n"
                           "}\n"
                           "def stage(x, c_in, c_out) {\n"
                           "  h = conv(x, c_in, c_out)\n"
                           "  repeat 2 {\n"
                           "    h = conv(h, c_out, c_out) + h\n"
                           "  }\n"
                           "  return max_pool2d(h, kernel=2)\n"
                           "}\n"
                           "h = stage(x, 3, 4)\n"
                           "repeat 2 {\n"
                           "  h = stage(h, 4, 4)\n"
                           "}\n"
                           "l = sum(global_avg_pool(conv(h, 4, 2)))\n"
                           "output h\n"
                           "minimize l\n");
    const char *names[] = {"stage.0.conv.0.w", "stage.0.conv.0.b", "stage.0.conv.1.w", "stage.0.conv.1.b",
                           "stage.0.conv.2.w", "stage.0.conv.2.b", "stage.1.conv.0.w", "stage.1.conv.0.b",
                           "stage.1.conv.1.w", "stage.1.conv.1.b", "stage.1.conv.2.w", "stage.1.conv.2.b",
                           "stage.2.conv.0.w", "stage.2.conv.0.b", "stage.2.conv.1.w", "stage.2.conv.1.b",
                           "stage.2.conv.2.w", "stage.2.conv.2.b", "conv.0.w", "conv.0.b"};
    ck_assert_int_eq(g->nparams, 20);
    for (int i = 0; i < 20; i++) ck_assert_str_eq(param_node(g, i)->name, names[i]);
    TYPE(param_node(g, 0), MG_F32, "first conv weight", 4, 3, 3, 3);
    TYPE(param_node(g, 2), MG_F32, "second conv weight", 4, 4, 3, 3);
    TYPE(param_node(g, 18), MG_F32, "last conv weight", 2, 4, 3, 3);
    TYPE(output_node(g, "h"), MG_F32, "h after three stages", 2, 4, 1, 1);
    mg_graph_free(g);
}
END_TEST

/* A block whose return value is another block's call returns that call's result (it once
 * returned node 0, here the unrelated global 'x', when called twice). */
START_TEST(test_def_returning_a_def_call)
{
    mg_graph *g = parse_ok("model m\ninput x: f32[4, 3]\ninput z: f32[4, 5]\n"
                           "def a(x) {\n  return relu(x)\n}\n"
                           "def b(x) {\n  u = tanh(x)\n  return a(u)\n}\n"
                           "h = b(z)\nh = b(h)\nl = sum(h)\noutput h\nminimize l\n");
    const mg_node *h = output_node(g, "h");
    ck_assert_int_eq(h->op, MG_OP_RELU);
    ck_assert_int_eq(g->nodes[h->in[0]].op, MG_OP_TANH);
    const mg_node *h1 = &g->nodes[g->nodes[h->in[0]].in[0]];
    ck_assert_int_eq(h1->op, MG_OP_RELU);
    ck_assert_int_eq(g->nodes[h1->in[0]].op, MG_OP_TANH);
    ck_assert_int_eq(g->nodes[g->nodes[h1->in[0]].in[0]].op, MG_OP_INPUT);
    ck_assert_str_eq(g->nodes[g->nodes[h1->in[0]].in[0]].name, "z");
    TYPE(h, MG_F32, "h", 4, 5);
    mg_graph_free(g);
}
END_TEST

/* transpose's perm counts negative entries from the end, as every other axis attribute does
 * (and NumPy and PyTorch): perm=[-1, 0] was refused. It makes the very graph perm=[1, 0] makes. */
START_TEST(test_transpose_negative_perm)
{
    const char *fmt = "model m\ninput x: f32[2, 3, 4]\nz = transpose(x, perm=%s)\nl = sum(z)\nminimize l\n";
    const char *same[][2] = {{"[-1, 0, 1]", "[2, 0, 1]"}, {"[0, -1, -2]", "[0, 2, 1]"}, {"[-3, -2, -1]", "[0, 1, 2]"}};
    for (int i = 0; i < 3; i++) {
        char a[256], b[256];
        snprintf(a, sizeof a, fmt, same[i][0]);
        snprintf(b, sizeof b, fmt, same[i][1]);
        mg_graph *ga = parse_ok(a), *gb = parse_ok(b);
        const mg_node *z = &ga->nodes[ga->nodes[ga->loss].in[0]];
        ck_assert_int_eq(z->op, MG_OP_TRANSPOSE);
        for (int k = 0; k < 3; k++)
            ck_assert_int_eq(z->type.shape.dim[k], ga->nodes[0].type.shape.dim[gb->nodes[z - ga->nodes].iattr[k]]);
        ck_assert_msg(mg_graph_hash(ga) == mg_graph_hash(gb), "perm=%s and perm=%s give different graphs", same[i][0],
                      same[i][1]);
        mg_graph_free(ga);
        mg_graph_free(gb);
    }
}
END_TEST

/* A declaration that takes a name in use hides what it named, which was silent: a warning in
 * the graph (the driver prints it) at the declaration, naming the earlier place as line:col.
 * Rebinding with '=' and a repeated param taking over its own name say nothing. */
START_TEST(test_declaration_hiding_warns)
{
    static const struct {
        const char *src;
        int line, col;
        const char *msg; /* NULL: no warning */
    } cases[] = {
        {HDR "h = x @ w\nparam h: f32[2]\nl = sum(h)\nminimize l\n", 6, 7,
         "param 'h' hides the value 'h' bound at 5:1: from here on 'h' names this param"},
        {HDR "h = x @ w\nrepeat 2 {\n  param w: f32[2, 2]\n  h = h @ w\n}\nl = sum(h)\nminimize l\n", 7, 9,
         "param 'w' hides the param 'w' declared at 4:7"},
        {HDR "x2 = x * 2\ninput x2: f32[3]\nl = sum(x2)\nminimize l\n", 6, 7,
         "input 'x2' hides the value 'x2' bound at 5:1: from here on 'x2' names this input"},
        {HDR "def f(a) {\n  param a: f32[2]\n  return a\n}\nl = sum(f(x) + f(x))\nminimize l\n", 6, 9,
         "param 'a' hides the argument 'a' of the def block at 5:7"},
        /* nothing to say */
        {HDR "h = x @ w\nh = relu(h)\nx = x / 2\nl = sum(h) + sum(x)\nminimize l\n", 0, 0, NULL},
        {HDR "h = x\nrepeat 3 {\n  param v: f32[3, 3]\n  repeat 2 {\n    param u: f32[3, 3]\n    h = h @ u\n  }\n"
             "  h = h @ v\n}\nl = sum(h)\nminimize l\n", 0, 0, NULL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        mg_graph *g = parse_ok(cases[i].src);
        if (!cases[i].msg) {
            ck_assert_msg(g->nwarnings == 0, "case %zu: warning '%s'", i, g->nwarnings ? g->warnings[0].msg : "");
        } else {
            ck_assert_msg(g->nwarnings == 1, "case %zu: %d warnings, expected 1", i, g->nwarnings);
            const mg_diag *w = &g->warnings[0];
            ck_assert_msg(w->loc.line == cases[i].line && w->loc.col == cases[i].col, "case %zu: warning at %d:%d: %s", i,
                          w->loc.line, w->loc.col, w->msg);
            ck_assert_msg(strstr(w->msg, cases[i].msg), "case %zu: '%s' lacks '%s'", i, w->msg, cases[i].msg);
            ck_assert_str_eq(w->loc.file, "ok.mg");
        }
        mg_graph_free(g);
    }
}
END_TEST

/* Attributes are part of the structural hash. */
START_TEST(test_attributes_change_the_hash)
{
    const char *fmt = "model m\ninput x: f32[1, 2, 6, 6]\nparam w: f32[2, 2, 3, 3]\n"
                      "l = sum(conv2d(x, w, %s))\nminimize l\n";
    const char *variants[] = {"pad=0", "pad=1", "stride=2", "dilation=2", "pad=2"};
    uint64_t h[5];
    for (int i = 0; i < 5; i++) {
        char src[512];
        snprintf(src, sizeof src, fmt, variants[i]);
        mg_graph *g = parse_ok(src);
        h[i] = mg_graph_hash(g);
        mg_graph_free(g);
        for (int j = 0; j < i; j++) ck_assert_msg(h[i] != h[j], "%s and %s hash alike", variants[i], variants[j]);
    }
}
END_TEST

/* Every NAME_state_desc entry has its own name, also when batch_norms share a scale param or
 * take an expression as their scale (the names come from mg_state_name). */
START_TEST(test_state_names_unique)
{
    const char *src = "model m\ninput x: f32[4, 3]\nparam g: f32[3] = ones\nparam b: f32[3] = zeros\n"
                      "h = batch_norm(x, g, b)\nh = batch_norm(h, g, b)\nh = batch_norm(h, g * 2, b)\n"
                      "s = g * 3\nh = batch_norm(h, s, b)\nh = dropout(h)\nl = sum(h)\nminimize l\n";
    const char *want[] = {"g.running_mean", "g.running_var", "batch_norm#1.running_mean", "batch_norm#1.running_var",
                          "batch_norm#2.running_mean", "batch_norm#2.running_var", "batch_norm#3.running_mean",
                          "batch_norm#3.running_var", "step"};
    mg_graph *g = NULL;
    mg_diag d = {0};
    ck_assert_msg(mg_parse("t.mg", src, strlen(src), &g, &d) == MG_OK, "%d:%d: %s", d.loc.line, d.loc.col, d.msg);
    mg_state_entry e[9];
    int64_t total = 0;
    ck_assert_int_eq(mg_state_layout(g, NULL, &total), 9);
    ck_assert_int_eq(mg_state_layout(g, e, &total), 9);
    for (int i = 0; i < 9; i++) {
        char buf[128];
        ck_assert_str_eq(mg_state_name(g, &e[i], buf, sizeof buf), want[i]);
    }
    mg_graph_free(g);
}
END_TEST

static Suite *parser_suite(void)
{
    Suite *s = suite_create("parser");
    TCase *e = tcase_create("errors");
    tcase_add_loop_test(e, test_error_table, 0, NERRORS);
    tcase_add_test(e, test_state_names_unique);
    tcase_add_test(e, test_error_file_is_callers);
    tcase_add_test(e, test_length_is_respected);
    suite_add_tcase(s, e);
    {
        TCase *b = tcase_create("regressions");
        tcase_add_test(b, test_fixed_huge_dimension_message);
        tcase_add_test(b, test_fixed_huge_repeat_count_message);
        tcase_add_test(b, test_fixed_comment_only_file_message);
        suite_add_tcase(s, b);
    }
    TCase *p = tcase_create("graphs");
    tcase_add_test(p, test_example_mlp_parses);
    tcase_add_test(p, test_slice_of_labels);
    tcase_add_test(p, test_repeat_names_params);
    tcase_add_test(p, test_nested_repeat_names);
    tcase_add_test(p, test_param_in_repeat_is_not_duplicate);
    tcase_add_test(p, test_rebinding);
    tcase_add_test(p, test_comments_blank_lines_and_continuations);
    tcase_add_test(p, test_crlf_and_no_final_newline);
    tcase_add_test(p, test_literal_constants);
    tcase_add_test(p, test_node_types);
    tcase_add_test(p, test_positions_recorded_on_nodes);
    tcase_add_test(p, test_constants_and_attributes);
    tcase_add_test(p, test_attributes_change_the_hash);
    tcase_add_test(p, test_transpose_negative_perm);
    tcase_add_test(p, test_declaration_hiding_warns);
    tcase_add_test(p, test_def_blocks);
    tcase_add_test(p, test_def_returning_a_def_call);
    suite_add_tcase(s, p);
    return s;
}

int main(void) { return tu_run_suite(parser_suite()); }
