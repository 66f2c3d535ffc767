"""Where headless Chromium lays out a page's elements, for tests of a page's layout.

Usage: chromium_layout.py CHROMIUM PAGE WIDTH [--print] SELECTOR...

Loads PAGE (a file path) in a WIDTH x 1000 viewport (with --print, as print media) and prints one
JSON object: for each SELECTOR the bounding box [left, top, right, bottom] of its first match in
CSS pixels (null if none), "width": the viewport's, "scroll_width": the document's (wider than the
viewport means a horizontal scroll bar). Speaks the DevTools protocol over --remote-debugging-pipe
(NUL-separated JSON on file descriptors 3 and 4), so it needs nothing but the standard library.
"""
import json
import os
import subprocess
import sys
import tempfile
import time


class Browser:
    def __init__(self, chromium, width):
        to_browser_read, self.to_browser = os.pipe()
        self.from_browser, from_browser_write = os.pipe()
        self.profile = tempfile.TemporaryDirectory(ignore_cleanup_errors=True)

        def descriptors():
            os.dup2(to_browser_read, 3)
            os.dup2(from_browser_write, 4)

        self.process = subprocess.Popen(
            [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
             "--remote-debugging-pipe", f"--user-data-dir={self.profile.name}",
             f"--window-size={width},1000", "about:blank"],
            pass_fds=(3, 4), preexec_fn=descriptors, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        os.close(to_browser_read)
        os.close(from_browser_write)
        self.buffer = b""
        self.next_id = 0
        self.session = None

    def call(self, method, **params):
        self.next_id += 1
        message = {"id": self.next_id, "method": method, "params": params}
        if self.session:
            message["sessionId"] = self.session
        os.write(self.to_browser, json.dumps(message).encode() + b"\0")
        while True:
            while b"\0" not in self.buffer:
                chunk = os.read(self.from_browser, 1 << 20)
                if not chunk:
                    raise RuntimeError("chromium closed the debugging pipe")
                self.buffer += chunk
            raw, self.buffer = self.buffer.split(b"\0", 1)
            answer = json.loads(raw)
            if answer.get("id") == self.next_id:
                if "error" in answer:
                    raise RuntimeError(f"{method}: {answer['error']}")
                return answer["result"]

    def close(self):
        self.process.kill()
        self.process.wait()
        self.profile.cleanup()


def main():
    chromium, page, width = sys.argv[1], os.path.abspath(sys.argv[2]), int(sys.argv[3])
    selectors = sys.argv[4:]
    printing = bool(selectors) and selectors[0] == "--print"
    if printing:
        selectors = selectors[1:]
    browser = Browser(chromium, width)
    try:
        target = next(t for t in browser.call("Target.getTargets")["targetInfos"] if t["type"] == "page")
        browser.session = browser.call("Target.attachToTarget", targetId=target["targetId"], flatten=True)["sessionId"]
        browser.call("Emulation.setDeviceMetricsOverride", width=width, height=1000, deviceScaleFactor=1, mobile=False)
        if printing:
            browser.call("Emulation.setEmulatedMedia", media="print")
        browser.call("Page.navigate", url="file://" + page)
        script = """(() => {
            const out = {width: window.innerWidth, scroll_width: document.documentElement.scrollWidth};
            for (const s of %s) {
                const e = document.querySelector(s);
                const r = e && e.getBoundingClientRect();
                out[s] = r ? [r.left, r.top, r.right, r.bottom] : null;
            }
            return document.readyState === "complete" ? out : null; })()""" % json.dumps(selectors)
        for _ in range(100):
            result = browser.call("Runtime.evaluate", expression=script, returnByValue=True)["result"].get("value")
            if result:
                print(json.dumps(result))
                return
            time.sleep(0.1)
        raise RuntimeError(f"{page} did not finish loading")
    finally:
        browser.close()


if __name__ == "__main__":
    main()
