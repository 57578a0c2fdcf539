"""Where a C, C++ or CUDA function is defined in a source file, for tools/gen_provenance.py's chain
symbols: comments, string and character literals (raw strings included) and preprocessor lines blanked,
braces matched, a name followed by its parameter list, qualifiers and a body at namespace scope taken as
a definition (templates and explicit specializations included, calls and declarations not)."""
import re


def raw_prefix(text, i):
    """True when the quote at text[i] opens a C++ raw string (R"x(...)x", u8R"(...)", ...)."""
    k = i
    while k > 0 and (text[k - 1].isalnum() or text[k - 1] == "_"):
        k -= 1
    return text[k:i] in ("R", "u8R", "uR", "UR", "LR")


def blank_noncode(text):
    """Same length as text, newlines kept, with comments, the insides of string and character
    literals, and preprocessor lines turned into spaces: braces and names left are code."""
    out = list(text)
    n, i = len(text), 0
    line_start = True

    def blank(a, b):
        for k in range(a, b):
            if out[k] != "\n":
                out[k] = " "

    while i < n:
        c = text[i]
        if c == "\n":
            line_start = True
            i += 1
            continue
        if line_start and c == "#":
            j = i
            while j < n and not (text[j] == "\n" and text[j - 1] != "\\"):
                j += 1
            blank(i, j)
            i = j
            continue
        if c in " \t\r\f\v":
            i += 1
            continue
        line_start = False
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            blank(i, j)
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            blank(i, j)
            i = j
        elif c == '"' and raw_prefix(text, i):
            m = re.compile(r'"([^()\\\s]{0,16})\(').match(text, i)
            if not m:
                i += 1
                continue
            end = text.find(")" + m.group(1) + '"', m.end())
            end = n if end < 0 else end + len(m.group(1)) + 2
            blank(i + 1, end - 1)
            i = end
        elif c in "\"'":
            if c == "'" and i > 0 and (text[i - 1].isalnum() or text[i - 1] == "_"):
                # digit separator (1'000) when the token started with a digit; else a prefix (u8'a')
                k = i
                while k > 0 and (text[k - 1].isalnum() or text[k - 1] in "_'"):
                    k -= 1
                if text[k].isdigit():
                    i += 1
                    continue
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            blank(i + 1, min(j, n))
            i = j + 1 if j < n and text[j] == c else j  # an unterminated literal ends at its line
        else:
            i += 1
    return "".join(out)


SCOPE_OPENER = re.compile(r'(?:\bextern\s*"\s*"|\bnamespace(?:\s+[\w:]+)?|\bnamespace\s+\w+\s*=)\s*$')
TRAILER = re.compile(r"\s*(?:const\b|volatile\b|noexcept\b|override\b|final\b|throw\b|__attribute__\b|&&|&)")


def brace_map(code):
    """(match, kinds): match[i] = offset of the brace closing/opening the one at i; kinds[i] = 'scope'
    for extern "C" / namespace blocks, 'body' for every other brace (functions, types, initializers)."""
    match, kinds, stack = {}, {}, []
    for i, c in enumerate(code):
        if c == "{":
            kinds[i] = "scope" if SCOPE_OPENER.search(code, max(0, i - 200), i) else "body"
            stack.append(i)
        elif c == "}" and stack:
            j = stack.pop()
            match[i], match[j] = j, i
    return match, kinds


def skip_balanced(code, i, open_c, close_c):
    """code[i] == open_c; returns the offset after its matching close_c, or -1."""
    depth = 0
    for k in range(i, len(code)):
        if code[k] == open_c:
            depth += 1
        elif code[k] == close_c:
            depth -= 1
            if depth == 0:
                return k + 1
    return -1


def body_depth(kinds, match, pos):
    """Number of 'body' braces open at pos."""
    return sum(1 for i, k in kinds.items() if k == "body" and i < pos and match.get(i, float("inf")) > pos)


def find_definitions(text, symbol):
    """[(first_line, last_line, kind)] of the definitions of `symbol` (a C function or a CUDA
    kernel, templates included) in text. first_line is where the declaration starts (template,
    qualifiers, return type), last_line holds the closing brace of the body."""
    code = blank_noncode(text)
    match, kinds = brace_map(code)
    found = []
    for m in re.finditer(r"(?<![\w.$])" + re.escape(symbol) + r"\b", code):
        if code[:m.start()].rstrip().endswith("->"):
            continue
        if body_depth(kinds, match, m.start()):
            continue
        i = m.end()
        while i < len(code) and code[i].isspace():
            i += 1
        if code.startswith("<", i) and not code.startswith("<<<", i):  # explicit specialization
            i = skip_balanced(code, i, "<", ">")
            while 0 <= i < len(code) and code[i].isspace():
                i += 1
        if i < 0 or not code.startswith("(", i):
            continue
        i = skip_balanced(code, i, "(", ")")
        if i < 0:
            continue
        while True:  # qualifiers and attributes between the parameter list and the body
            t = TRAILER.match(code, i)
            if not t:
                break
            i = t.end()
            while i < len(code) and code[i].isspace():
                i += 1
            if code.startswith("(", i):
                i = skip_balanced(code, i, "(", ")")
                if i < 0:
                    break
        if i < 0:
            continue
        while i < len(code) and code[i].isspace():
            i += 1
        if code.startswith("->", i):  # trailing return type
            j = i
            while j < len(code) and code[j] not in "{;":
                j += 1
            i = j
        if not code.startswith("{", i) or i not in match:
            continue
        start = max(code.rfind(";", 0, m.start()), code.rfind("}", 0, m.start()), code.rfind("{", 0, m.start())) + 1
        while code[start].isspace():
            start += 1
        prefix = code[start:m.start()]
        kind = "kernel" if re.search(r"\b__global__\b", prefix) else "function"
        first = text.count("\n", 0, start) + 1
        last = text.count("\n", 0, match[i]) + 1
        found.append((first, last, kind))
    return found


NAME = re.compile(r"\s*([A-Za-z_]\w*)\s*")


def defined_kernels(text):
    """[(name, first_line)] of the CUDA kernels (__global__ functions) text defines, in file order;
    declarations left out."""
    code = blank_noncode(text)
    names = []
    for g in re.finditer(r"\b__global__\b", code):
        i = g.end()
        while True:  # past the return type and attributes (__launch_bounds__(...)) to the name
            m = NAME.match(code, i)
            if not m:
                break
            i = m.end()
            if code.startswith("(", i):
                if m.group(1).startswith("__") and m.group(1).endswith("__"):
                    i = skip_balanced(code, i, "(", ")")
                    if i < 0:
                        break
                    continue
                if m.group(1) not in names:
                    names.append(m.group(1))
                break
    out = []
    for name in names:
        kernels = [first for first, _, kind in find_definitions(text, name) if kind == "kernel"]
        if kernels:
            out.append((name, kernels[0]))
    return out
