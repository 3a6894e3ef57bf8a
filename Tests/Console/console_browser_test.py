#!/usr/bin/env python3
"""The web console in a real browser: headless Chromium (Debian's chromium and chromium-driver,
driven by selenium) opens a daemon's console, finds this device's ID and a pending device, clicks
Accept, and sees the device trusted and connected; then creates a zone and shares it with that
device through the share dialog, and sees it a member (through the API and on the page).

    python3 Tests/Console/console_browser_test.py .build/debug/shoal [--screenshots docs]

Starts two daemons on loopback (ports of the system's choosing) in a temporary directory and
stops them however the test ends. With --screenshots, saves the console as PNG files there.
"""
import json, os, re, shutil, signal, subprocess, sys, tempfile, time, urllib.request

from selenium import webdriver
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.common.exceptions import StaleElementReferenceException
from selenium.webdriver.support.ui import Select, WebDriverWait


def run(shoal, *args):
    return subprocess.run([shoal, *args], check=True, capture_output=True, text=True, timeout=60).stdout.strip()


class Daemon:
    def __init__(self, shoal, data, *extra):
        self.log = open(os.path.join(data, "serve.log"), "w+")
        self.proc = subprocess.Popen([shoal, "serve", "--data", data, "--listen", "127.0.0.1:0", "--http", "127.0.0.1:0", *extra],
                                     stdout=self.log, stderr=subprocess.STDOUT)

    def ports(self):
        deadline = time.time() + 60
        while time.time() < deadline:
            self.log.seek(0)
            text = self.log.read()
            listen, http = re.search(r"listen=127\.0\.0\.1:(\d+)", text), re.search(r"http=127\.0\.0\.1:(\d+)", text)
            if listen and http:
                return int(listen.group(1)), int(http.group(1))
            if self.proc.poll() is not None:
                break
            time.sleep(0.1)
        raise RuntimeError("daemon did not start: " + text)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()


def api(port, key, method, path, body=None):
    request = urllib.request.Request(f"http://127.0.0.1:{port}{path}", method=method, headers={"X-API-Key": key, "Content-Type": "application/json"},
                                     data=json.dumps(body).encode() if body is not None else None)
    with urllib.request.urlopen(request, timeout=30) as r:
        return json.load(r)


def browser():
    options = Options()
    for flag in ["--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu", "--window-size=1200,1900"]:
        options.add_argument(flag)
    binary = shutil.which("chromium") or shutil.which("chromium-browser")
    if binary:
        options.binary_location = binary
    driver = shutil.which("chromedriver") or "/usr/lib/chromium/chromedriver"
    return webdriver.Chrome(service=Service(driver), options=options)


def main():
    shoal = os.path.abspath(sys.argv[1])
    shots = sys.argv[sys.argv.index("--screenshots") + 1] if "--screenshots" in sys.argv else None
    root = tempfile.mkdtemp(prefix="shoal-console-")
    daemons, driver = [], None
    try:
        a, b = os.path.join(root, "a"), os.path.join(root, "b")
        for d in (a, b):
            run(shoal, "init", "--data", d)
        id_a, id_b = run(shoal, "id", "--data", a), run(shoal, "id", "--data", b)
        run(shoal, "peer", "add", id_a, "--name", "a", "--data", b)
        key = run(shoal, "http-key", "--data", a)
        daemons.append(Daemon(shoal, a))
        listen_a, http_a = daemons[0].ports()
        daemons.append(Daemon(shoal, b, "--peer", f"127.0.0.1:{listen_a}"))
        daemons[1].ports()

        driver = browser()
        # The console re-renders its tables as news arrives: an element found a moment ago can
        # be gone when it is read, and the wait then tries again.
        wait = WebDriverWait(driver, 60, ignored_exceptions=(StaleElementReferenceException,))
        # The key goes in the fragment, which the browser never sends to the server.
        driver.get(f"http://127.0.0.1:{http_a}/#key={key}")
        wait.until(lambda d: d.find_element(By.ID, "device-id").text == id_a)
        print(f"console shows this device's ID {id_a}")
        if shutil.which("zbarimg"):
            # The QR code next to it reads back as the same ID.
            qr = os.path.join(root, "qr.png")
            driver.find_element(By.ID, "qr").screenshot(qr)
            decoded = subprocess.run(["zbarimg", "-q", "--raw", qr], capture_output=True, text=True, timeout=30).stdout.strip()
            assert decoded == id_a, f"the QR code reads {decoded!r}, not {id_a}"
            print("its QR code reads back as that ID")
        row = f'#pending tr[data-device="{id_b}"]'
        wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, row))
        print(f"console lists {id_b} as pending")
        if shots:
            os.makedirs(shots, exist_ok=True)
            driver.save_screenshot(os.path.join(shots, "console-pending.png"))
        driver.find_element(By.CSS_SELECTOR, row + " button.accept").click()
        trusted = f'#trusted tr[data-device="{id_b}"]'
        wait.until(lambda d: any("connected" == c.text for c in d.find_elements(By.CSS_SELECTOR, trusted + " td")))
        assert not driver.find_elements(By.CSS_SELECTOR, row), "the device is still pending after Accept"
        devices = api(http_a, key, "GET", "/api/v1/devices")
        assert any(t["device"] == id_b for t in devices["trusted"]), devices
        print("clicking Accept trusted it; it is connected")

        # A zone made in the console, shared with the trusted device through the share dialog.
        driver.find_element(By.ID, "zone-name").send_keys("notes")
        driver.find_element(By.CSS_SELECTOR, "#zone-form button[type=submit]").click()
        zone_row = '#zones tr[data-zone="notes"]'
        wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, zone_row))
        share_button = [b for b in driver.find_elements(By.CSS_SELECTOR, zone_row + " button") if b.text.startswith("Share")]
        assert share_button, "the owner's zone has no Share button"
        share_button[0].click()
        dialog = driver.find_element(By.ID, "share-dialog")
        wait.until(lambda d: dialog.is_displayed())
        assert driver.find_element(By.ID, "share-zone").text == "notes"
        devices = Select(driver.find_element(By.ID, "share-device"))
        assert id_b in [o.get_attribute("value") for o in devices.options], "the trusted device is not offered in the dialog"
        devices.select_by_value(id_b)
        Select(driver.find_element(By.ID, "share-role")).select_by_value("readOnly")
        driver.find_element(By.ID, "share-ok").click()
        wait.until(lambda d: not dialog.is_displayed())

        def member():
            members = api(http_a, key, "GET", "/api/v1/zones/notes/members")["members"]
            return next((m for m in members if m["device"] == id_b), None)
        wait.until(lambda d: member() is not None)
        assert member()["role"] == "readOnly", member()
        wait.until(lambda d: "(readOnly)" in d.find_element(By.CSS_SELECTOR, zone_row).text)
        print("the share dialog made it a read-only member of notes")

        if shots:
            for i, (title, count) in enumerate([("Milk and eggs", 2), ("Bread", 1), ("Coffee beans", 3)]):
                api(http_a, key, "PUT", f"/api/v1/zones/notes/records/item{i}", {"type": "Note", "fields": {"title": title, "count": count}})
            wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, '#zones tr[data-zone="notes"]'))
            wait.until(lambda d: "caught up" in d.find_element(By.ID, "sync").text or "up to date" in d.find_element(By.ID, "sync").text)
            driver.find_element(By.ID, "query-type").send_keys("Note")
            driver.find_element(By.CSS_SELECTOR, "#query-form button[type=submit]").click()
            wait.until(lambda d: "Coffee beans" in d.find_element(By.ID, "records").text)
            driver.save_screenshot(os.path.join(shots, "console.png"))
            print(f"screenshots in {shots}")
        print("1 passed, 0 failed")
    finally:
        if driver:
            driver.quit()
        for d in daemons:
            d.stop()
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
