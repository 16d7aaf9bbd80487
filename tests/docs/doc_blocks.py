#!/usr/bin/env python3
"""Runs the code blocks of README.md and docs/*.md, so that a page that drifts from the code
fails, naming the page and line (docs/testing.md, "Docs that run").

Every fenced block runs, unless the HTML comment on the line before its fence says otherwise:

  ```cpp      a whole program (it has `int main`), or the body that the named harness
              tests/docs/harness/NAME.cpp wraps (its #include and `using namespace` lines go
              above the harness's code). All of them are compiled together, as one CMake project
              against the installed package (find_package(broadphase CONFIG)), then each is run.
              A compiler error names the page and line (#line).
  ```sh       run by bash -e in the page's own fresh folder, which holds examples/data/ and
              `build`, a link to the build tree; the blocks of a page run in order, so a later
              block sees the files an earlier one wrote.
  ```python   run by the Python the module was built for, with the build's module first on
              PYTHONPATH, in the page's folder.
  ```cmake    with a harness only: the folder tests/docs/harness/NAME/ is copied, the block put
              in place of its `# @body` line, and the project configured against the installed
              package and this source tree (third_party/broadphase).

The markers (one comment, directives separated by ';'):

  <!-- doc-test: output -->             output shown on the page: not run
  <!-- doc-test: fragment REASON -->    not run, for the reason given (a reason is required)
  <!-- doc-test: harness NAME -->       wrapped by the named harness, as above
  <!-- doc-test: excerpt PATH -->       a copy of declarations in PATH (from the source root):
                                        each line's code, comments and spacing aside, is in PATH
  <!-- doc-test: file NAME -->          written to NAME in the page's folder, for later blocks
                                        (and equal to examples/data/NAME where that exists)
  <!-- doc-test: output-of COMMAND -->  the standard output of COMMAND, run by bash in the
                                        page's folder after the blocks before it: must match
  <!-- doc-test: replace FROM TO -->    run with every FROM replaced by TO (a smaller scene for
                                        a machine without a GPU; quote words with spaces); may
                                        repeat

Usage:
  doc_blocks.py --source SRC --build BUILD --work WORK [--python PY] [--prefix P]
                [--expect-failures PAGE:LINE,...] [PAGE...]
With no PAGE: SRC/README.md and SRC/docs/*.md. With --expect-failures, the run passes only
when exactly those blocks fail (the test of this script: tests/docs/drifted.md).
"""

import argparse
import os
import re
import shlex
import shutil
import subprocess
import sys
import textwrap

MARKER = re.compile(r"^\s*<!--\s*doc-test:\s*(.*?)\s*-->\s*$")
FENCE = re.compile(r"^```\s*([A-Za-z0-9_+-]*)\s*$")
RUN_TIMEOUT = 300


class Block:
    def __init__(self, page, line, lang, text, directives):
        self.page = page  # relative to the source root, as a reader names it
        self.line = line  # the first line of code, 1-based
        self.lang = lang
        self.text = text
        self.directives = directives  # [(word, rest)]

    def where(self):
        return f"{self.page}:{self.line}"

    def directive(self, word):
        for w, rest in self.directives:
            if w == word:
                return rest
        return None


def parse_directives(body):
    if body.startswith("fragment"):  # the reason is free text, ';' included
        return [("fragment", body[len("fragment"):].strip())]
    out = []
    for part in body.split(";"):
        part = part.strip()
        if not part:
            continue
        word, _, rest = part.partition(" ")
        out.append((word, rest.strip()))
    return out


def read_blocks(path, rel, problems):
    lines = open(path, encoding="utf-8").read().split("\n")
    blocks = []
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        start = i
        j = i + 1
        while j < len(lines) and not lines[j].startswith("```"):
            j += 1
        if j == len(lines):
            problems.append(f"{rel}:{start + 1}: a fence that never closes")
            break
        marker = None
        k = start - 1
        while k >= 0 and not lines[k].strip():
            k -= 1
        if k >= 0:
            mm = MARKER.match(lines[k])
            if mm:
                marker = mm.group(1)
        directives = parse_directives(marker) if marker else []
        blocks.append(Block(rel, start + 2, m.group(1), "\n".join(lines[start + 1:j]) + "\n",
                            directives))
        i = j + 1
    return blocks


def code_of(line):
    """A line's code: comments after // or # dropped, spacing collapsed."""
    line = re.sub(r"//.*", "", line)
    return " ".join(line.split())


class Runner:
    def __init__(self, args):
        self.args = args
        self.source = os.path.abspath(args.source)
        self.build = os.path.abspath(args.build)
        self.work = os.path.abspath(args.work)
        self.failures = []  # (where, message)
        self.ran = 0
        self.not_run = 0

    def fail(self, block, message):
        self.failures.append((block.where(), message))
        print(f"FAILED {block.where()}: {message}", flush=True)

    def page_dir(self, page):
        d = os.path.join(self.work, "pages", page.replace("/", "_"))
        if not os.path.isdir(d):
            os.makedirs(d)
            data = os.path.join(self.source, "examples", "data")
            if os.path.isdir(data):
                for name in os.listdir(data):
                    shutil.copy(os.path.join(data, name), d)
            os.symlink(self.build, os.path.join(d, "build"))
        return d

    def apply_replacements(self, block, text):
        for w, rest in block.directives:
            if w == "replace":
                parts = shlex.split(rest)
                if len(parts) != 2:
                    self.fail(block, f"replace takes FROM TO, not '{rest}'")
                    return None
                if parts[0] not in text:
                    self.fail(block, f"replace: '{parts[0]}' is not in the block")
                    return None
                text = text.replace(parts[0], parts[1])
        return text

    # --- excerpt: the declarations a page copies from a header
    def check_excerpt(self, block, path):
        full = os.path.join(self.source, path)
        if not os.path.isfile(full):
            self.fail(block, f"excerpt: no file {path}")
            return
        code = " ".join(code_of(l) for l in open(full, encoding="utf-8"))
        code = " ".join(code.split())
        for n, line in enumerate(block.text.split("\n")):
            c = code_of(line)
            if c and c not in code:
                self.failures.append((f"{block.page}:{block.line + n}",
                                      f"not in {path}: {c}"))
                print(f"FAILED {block.page}:{block.line + n}: not in {path}: {c}", flush=True)
        self.ran += 1

    # --- the output a page shows for a command
    def check_output(self, block, command):
        self.ran += 1
        d = self.page_dir(block.page)
        r = subprocess.run(["bash", "-c", command], cwd=d, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, timeout=RUN_TIMEOUT)
        got = r.stdout.decode(errors="replace")
        if r.returncode != 0:
            self.fail(block, f"'{command}' exited {r.returncode}:\n"
                      + textwrap.indent(r.stderr.decode(errors="replace")[-3000:], "    "))
        elif got.split("\n") != block.text.split("\n"):
            want = block.text.split("\n")
            lines = got.split("\n")
            n = next(i for i in range(max(len(want), len(lines)))
                     if i >= len(want) or i >= len(lines) or want[i] != lines[i])
            self.failures.append((f"{block.page}:{block.line + n}", "output differs"))
            print(f"FAILED {block.page}:{block.line + n}: '{command}' prints "
                  f"{lines[n] if n < len(lines) else '(nothing more)'!r} here, the page "
                  f"{want[n] if n < len(want) else '(nothing more)'!r}", flush=True)

    # --- shell
    def run_sh(self, block):
        text = self.apply_replacements(block, block.text)
        if text is None:
            return
        d = self.page_dir(block.page)
        # the block starts at its page line, so that bash's LINENO is the page's line
        script = ('trap \'echo "doc-test: the command at line $LINENO failed" >&2\' ERR'
                  + "\n" * (block.line - 1) + text)
        path = os.path.join(d, f"block_{block.line}.sh")
        with open(path, "w") as f:
            f.write(script)
        self.execute(block, ["bash", "-e", path], d)

    # --- python
    def run_python(self, block):
        text = self.apply_replacements(block, block.text)
        if text is None:
            return
        if not self.args.python:
            self.fail(block, "a Python block, and no --python (the module is not built)")
            return
        d = self.page_dir(block.page)
        path = os.path.join(d, f"block_{block.line}.py")
        with open(path, "w") as f:
            f.write("\n" * (block.line - 1) + text)  # tracebacks name the page's lines
        env = dict(os.environ)
        if self.args.python_path:
            env["PYTHONPATH"] = os.pathsep.join(
                [self.args.python_path] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
        self.execute(block, [self.args.python, path], d, env)

    def execute(self, block, command, cwd, env=None):
        self.ran += 1
        try:
            r = subprocess.run(command, cwd=cwd, env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, timeout=RUN_TIMEOUT)
        except subprocess.TimeoutExpired:
            self.fail(block, f"still running after {RUN_TIMEOUT} s")
            return
        out = r.stdout.decode(errors="replace")
        if r.returncode != 0:
            self.fail(block, f"exited {r.returncode}:\n{textwrap.indent(out[-4000:], '    ')}")
        elif self.args.verbose:
            print(f"ok {block.where()}\n{textwrap.indent(out[-2000:], '    ')}", flush=True)

    # --- C++: compiled together, then run one by one
    def cpp_source(self, block):
        harness = block.directive("harness")
        if harness is None:
            if not re.search(r"\bint\s+main\s*\(", block.text):
                self.fail(block, "not a whole program (no main): name a harness "
                                 "(<!-- doc-test: harness NAME -->) or mark it a fragment")
                return None, None
            return f'#line {block.line} "{block.page}"\n{block.text}', ["broadphase::gpu"]
        hpath = os.path.join(self.source, "tests", "docs", "harness", harness + ".cpp")
        if not os.path.isfile(hpath):
            self.fail(block, f"no harness tests/docs/harness/{harness}.cpp")
            return None, None
        htext = open(hpath, encoding="utf-8").read()
        link = re.search(r"doc-test link:\s*(.*)", htext)
        libs = link.group(1).split() if link else ["broadphase::gpu"]
        top, body = [], []
        for n, line in enumerate(block.text.split("\n")):
            target = top if re.match(r"\s*(#include|using namespace)", line) else body
            target.append(f'#line {block.line + n} "{block.page}"\n{line}')
        hrel = f"tests/docs/harness/{harness}.cpp"
        out = []
        for n, line in enumerate(htext.split("\n")):
            if line.strip() == "// @top":
                out += top
                out.append(f'#line {n + 2} "{hrel}"')
            elif line.strip() == "// @body":
                out += body
                out.append(f'#line {n + 2} "{hrel}"')
            else:
                out.append(line)
        return "\n".join(out), libs

    def run_cpp(self, blocks):
        if not blocks:
            return
        prefix = self.args.prefix
        if not prefix:
            prefix = os.path.join(self.work, "prefix")
            shutil.rmtree(prefix, ignore_errors=True)
            r = subprocess.run(["cmake", "--install", self.build, "--prefix", prefix,
                                "--component", "Unspecified"],
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
            if r.returncode != 0:
                print(r.stdout.decode(errors="replace"))
                for b in blocks:
                    self.fail(b, "could not install the build to compile against")
                return
        proj = os.path.join(self.work, "cpp")
        shutil.rmtree(proj, ignore_errors=True)
        os.makedirs(proj)
        targets = []
        components = set()
        for b in blocks:
            src, libs = self.cpp_source(b)
            if src is None:
                continue
            name = "block_" + re.sub(r"[^A-Za-z0-9]", "_", b.page) + f"_{b.line}"
            with open(os.path.join(proj, name + ".cpp"), "w") as f:
                f.write(src + "\n")
            for lib in libs:
                if lib.startswith("broadphase::"):
                    components.add(lib.split("::")[1])
            targets.append((b, name, libs))
        if not targets:
            return
        cm = ["cmake_minimum_required(VERSION 3.25)", "project(doc_blocks CXX)",
              "set(CMAKE_CXX_STANDARD 20)", "set(CMAKE_CXX_STANDARD_REQUIRED ON)",
              f"find_package(broadphase CONFIG REQUIRED COMPONENTS {' '.join(sorted(components))})"]
        for b, name, libs in targets:
            cm.append(f"add_executable({name} {name}.cpp)")
            cm.append(f"target_link_libraries({name} PRIVATE {' '.join(libs)})")
            cm.append(f"target_include_directories({name} PRIVATE "
                      f"{os.path.join(self.source, 'tests', 'docs', 'harness')})")
        with open(os.path.join(proj, "CMakeLists.txt"), "w") as f:
            f.write("\n".join(cm) + "\n")
        bdir = os.path.join(proj, "build")
        r = subprocess.run(["cmake", "-S", proj, "-B", bdir, f"-DCMAKE_PREFIX_PATH={prefix}",
                            "-DCMAKE_BUILD_TYPE=Debug", "-DCMAKE_CXX_FLAGS_DEBUG=-O0"],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        if r.returncode != 0:
            out = r.stdout.decode(errors="replace")
            for b, _, _ in targets:
                self.fail(b, "the C++ blocks' project did not configure:\n"
                          + textwrap.indent(out[-3000:], "    "))
            return
        jobs = str(os.cpu_count() or 2)
        r = subprocess.run(["cmake", "--build", bdir, "-j", jobs, "--", "-k"],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        log = r.stdout.decode(errors="replace")
        for b, name, _ in targets:
            exe = os.path.join(bdir, name)
            if not os.path.isfile(exe):
                errors = [l for l in log.split("\n") if l.startswith(b.page + ":")
                          and ("error" in l or "note" in l)]
                self.fail(b, "does not compile:\n" + textwrap.indent(
                    "\n".join(errors[:20]) or log[-3000:], "    "))
                continue
            self.execute(b, [exe], self.page_dir(b.page))

    # --- CMake
    def run_cmake(self, block):
        harness = block.directive("harness")
        hdir = os.path.join(self.source, "tests", "docs", "harness", harness or "")
        if not harness or not os.path.isfile(os.path.join(hdir, "CMakeLists.txt")):
            self.fail(block, "a CMake block needs a harness folder tests/docs/harness/NAME/")
            return
        proj = os.path.join(self.work, "cmake", f"{block.page.replace('/', '_')}_{block.line}")
        shutil.rmtree(proj, ignore_errors=True)
        shutil.copytree(hdir, proj)
        os.makedirs(os.path.join(proj, "third_party"))
        os.symlink(self.source, os.path.join(proj, "third_party", "broadphase"))
        cml = os.path.join(proj, "CMakeLists.txt")
        text = open(cml, encoding="utf-8").read()
        text = text.replace("# @body\n", block.text)
        with open(cml, "w") as f:
            f.write(text)
        prefix = self.args.prefix or os.path.join(self.work, "prefix")
        self.execute(block, ["cmake", "-S", proj, "-B", os.path.join(proj, "build"),
                             f"-DCMAKE_PREFIX_PATH={prefix}"], proj)

    def run(self, pages):
        problems = []
        blocks = []
        for page in pages:
            full = os.path.join(self.source, page)
            blocks += read_blocks(full, page, problems)
        for p in problems:
            print("FAILED " + p)
            self.failures.append((p.split(": ")[0], p))
        cpp = []
        runnable = []
        for b in blocks:
            words = [w for w, _ in b.directives]
            unknown = [w for w in words if w not in
                       ("output", "output-of", "fragment", "harness", "excerpt", "file",
                        "replace")]
            if unknown:
                self.fail(b, f"unknown doc-test directive '{unknown[0]}'")
                continue
            if "output" in words:
                self.not_run += 1
                continue
            if "fragment" in words:
                if not b.directive("fragment"):
                    self.fail(b, "a fragment says why it is not run: <!-- doc-test: fragment REASON -->")
                else:
                    self.not_run += 1
                continue
            if "excerpt" in words:
                self.check_excerpt(b, b.directive("excerpt"))
                continue
            if "file" in words or "output-of" in words:
                continue  # written or run when its page's turn comes, in order
            if b.lang == "cpp":
                cpp.append(b)
            elif b.lang in ("sh", "python", "cmake"):
                pass
            else:
                self.fail(b, f"a '{b.lang or 'plain'}' block with no marker: mark it output, "
                             "fragment REASON, excerpt PATH or file NAME")
                continue
            runnable.append(b)
        # shell, Python and file blocks in page order (a page's blocks build on each other),
        # the C++ ones compiled together first
        self.run_cpp(cpp)
        for b in blocks:
            words = [w for w, _ in b.directives]
            if "file" in words and not ("output" in words or "fragment" in words):
                name = b.directive("file")
                shipped = os.path.join(self.source, "examples", "data", name)
                if os.path.isfile(shipped) and open(shipped).read() != b.text:
                    self.fail(b, f"examples/data/{name} differs from this block: "
                                 "the page and the sample file must agree")
                with open(os.path.join(self.page_dir(b.page), name), "w") as f:
                    f.write(b.text)
            elif "output-of" in words:
                self.check_output(b, b.directive("output-of"))
            elif b in runnable and b.lang == "sh":
                self.run_sh(b)
            elif b in runnable and b.lang == "python":
                self.run_python(b)
            elif b in runnable and b.lang == "cmake":
                self.run_cmake(b)
        print(f"doc_blocks: {len(blocks)} blocks in {len(pages)} pages: {self.ran} run or "
              f"checked, {self.not_run} marked output or fragment, {len(self.failures)} failed")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--source", required=True)
    ap.add_argument("--build", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--prefix", help="an installed package (default: BUILD installed in WORK)")
    ap.add_argument("--python")
    ap.add_argument("--python-path")
    ap.add_argument("--expect-failures", default=None)
    ap.add_argument("--verbose", action="store_true")
    ap.add_argument("pages", nargs="*")
    args = ap.parse_args()
    pages = args.pages or (["README.md"] + sorted(
        "docs/" + f for f in os.listdir(os.path.join(args.source, "docs")) if f.endswith(".md")))
    work = os.path.abspath(args.work)
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    runner = Runner(args)
    runner.run(pages)
    failed = sorted({w for w, _ in runner.failures})
    if args.expect_failures is not None:
        expected = sorted(set(args.expect_failures.split(",")))
        if failed != expected:
            print(f"doc_blocks: expected exactly {expected} to fail, got {failed}")
            return 1
        print(f"doc_blocks: the drifted blocks were caught: {', '.join(failed)}")
        return 0
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
