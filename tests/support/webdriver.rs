//! A small W3C WebDriver client over reqwest, driving Debian's `chromium` through its
//! `chromium-driver` (`chromedriver`), headless: enough for the web inbox's browser
//! tests (open a page, find elements, click, type, read, screenshot), without a
//! browser-automation crate and its dependency tree.

use std::process::{Child, Command, Stdio};
use std::time::Duration;

use base64::Engine as _;
use serde_json::{Value, json};

use super::wait_until;

/// The key W3C WebDriver names element references with.
const ELEMENT: &str = "element-6066-11e4-a52e-4f735466cecf";

/// Where Debian installs the driver and the browser.
pub const DRIVER: &str = "/usr/bin/chromedriver";
pub const CHROMIUM: &str = "/usr/bin/chromium";

/// A running `chromedriver`, stopped on drop.
pub struct Driver {
    child: Child,
    url: String,
    http: reqwest::Client,
}

impl Driver {
    pub async fn start() -> Driver {
        let port = {
            let socket = std::net::TcpListener::bind("127.0.0.1:0").expect("a free port");
            socket.local_addr().expect("addr").port()
        };
        for (path, package) in [(DRIVER, "chromium-driver"), (CHROMIUM, "chromium")] {
            assert!(std::path::Path::new(path).exists(), "{path} is missing: apt-get install -y chromium chromium-driver (package {package})");
        }
        let child = Command::new(DRIVER).arg(format!("--port={port}")).stdout(Stdio::null()).stderr(Stdio::null()).spawn().expect("chromedriver starts");
        let driver = Driver { child, url: format!("http://127.0.0.1:{port}"), http: reqwest::Client::new() };
        wait_until(|| async {
            let status = driver.http.get(format!("{}/status", driver.url)).send().await.ok()?;
            let body: Value = status.json().await.ok()?;
            body["value"]["ready"].as_bool().filter(|ready| *ready)
        })
        .await;
        driver
    }

    /// A new headless browser window of `width`×`height`.
    pub async fn browser(&self, width: u32, height: u32) -> Browser {
        let capabilities = json!({"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "goog:chromeOptions": {
                "binary": CHROMIUM,
                "args": ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", format!("--window-size={width},{height}"), "--lang=en-US"]
            }
        }}});
        let answer: Value = self.http.post(format!("{}/session", self.url)).json(&capabilities).send().await.expect("new session").json().await.expect("json");
        let id = answer["value"]["sessionId"].as_str().unwrap_or_else(|| panic!("no session: {answer}")).to_owned();
        Browser { base: format!("{}/session/{id}", self.url), http: self.http.clone() }
    }
}

impl Drop for Driver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One browser window.
pub struct Browser {
    base: String,
    http: reqwest::Client,
}

/// An element on the page.
#[derive(Debug, Clone)]
pub struct Element(String);

impl Browser {
    async fn call(&self, method: reqwest::Method, path: &str, body: Option<Value>) -> Value {
        match self.try_call(method, path, body).await {
            Ok(value) => value,
            Err(error) => panic!("webdriver {path}: {error}"),
        }
    }

    /// As `call`, with WebDriver's error as `Err` (its code, then its message).
    async fn try_call(&self, method: reqwest::Method, path: &str, body: Option<Value>) -> Result<Value, String> {
        let mut request = self.http.request(method, format!("{}{path}", self.base));
        if let Some(body) = body {
            request = request.json(&body);
        }
        let answer: Value = request.send().await.expect("webdriver").json().await.expect("webdriver json");
        match answer["value"]["error"].as_str() {
            Some(error) => Err(format!("{error}: {}", answer["value"]["message"])),
            None => Ok(answer["value"].clone()),
        }
    }

    pub async fn goto(&self, url: &str) {
        self.call(reqwest::Method::POST, "/url", Some(json!({"url": url}))).await;
    }

    pub async fn title(&self) -> String {
        self.call(reqwest::Method::GET, "/title", None).await.as_str().unwrap_or_default().to_owned()
    }

    pub async fn source(&self) -> String {
        self.call(reqwest::Method::GET, "/source", None).await.as_str().unwrap_or_default().to_owned()
    }

    /// The elements matching a CSS selector.
    pub async fn all(&self, css: &str) -> Vec<Element> {
        let found = self.call(reqwest::Method::POST, "/elements", Some(json!({"using": "css selector", "value": css}))).await;
        found.as_array().into_iter().flatten().filter_map(|e| e[ELEMENT].as_str()).map(|id| Element(id.to_owned())).collect()
    }

    /// The one element matching `css`, waiting for it to appear.
    pub async fn find(&self, css: &str) -> Element {
        wait_until(|| async { self.all(css).await.into_iter().next() }).await
    }

    /// The button whose accessible name (as the browser computes it for screen
    /// readers) is `name`, waiting for it to appear; its `nth` match.
    pub async fn button(&self, name: &str, nth: usize) -> Element {
        wait_until(|| async {
            let mut matching = Vec::new();
            for button in self.all("button").await {
                if self.label(&button).await == name {
                    matching.push(button);
                }
            }
            matching.into_iter().nth(nth)
        })
        .await
    }

    /// The accessible name of `element`.
    pub async fn label(&self, element: &Element) -> String {
        let value =
            self.http.get(format!("{}/element/{}/computedlabel", self.base, element.0)).send().await.expect("label").json::<Value>().await.expect("json");
        value["value"].as_str().unwrap_or_default().to_owned()
    }

    pub async fn click(&self, element: &Element) {
        self.call(reqwest::Method::POST, &format!("/element/{}/click", element.0), Some(json!({}))).await;
    }

    /// Replaces the text of a field.
    pub async fn type_into(&self, element: &Element, text: &str) {
        self.call(reqwest::Method::POST, &format!("/element/{}/clear", element.0), Some(json!({}))).await;
        self.call(reqwest::Method::POST, &format!("/element/{}/value", element.0), Some(json!({"text": text}))).await;
    }

    pub async fn text(&self, element: &Element) -> String {
        self.call(reqwest::Method::GET, &format!("/element/{}/text", element.0), None).await.as_str().unwrap_or_default().to_owned()
    }

    /// Waits until the page's text (the body's) contains `needle`. A body that goes
    /// stale while it is read (the page was replaced: a form posted, a redirect) is
    /// looked up again.
    pub async fn wait_text(&self, needle: &str) -> String {
        wait_until(|| async {
            let body = self.all("body").await.into_iter().next()?;
            let text = match self.try_call(reqwest::Method::GET, &format!("/element/{}/text", body.0), None).await {
                Ok(text) => text.as_str().unwrap_or_default().to_owned(),
                Err(error) if error.starts_with("stale element reference") => return None,
                Err(error) => panic!("webdriver text: {error}"),
            };
            text.contains(needle).then_some(text)
        })
        .await
    }

    /// Runs `script` in the page and returns what it returns.
    pub async fn run(&self, script: &str) -> Value {
        self.call(reqwest::Method::POST, "/execute/sync", Some(json!({"script": script, "args": []}))).await
    }

    /// A PNG of the window.
    pub async fn screenshot(&self) -> Vec<u8> {
        let encoded = self.call(reqwest::Method::GET, "/screenshot", None).await;
        base64::engine::general_purpose::STANDARD.decode(encoded.as_str().unwrap_or_default()).expect("base64 png")
    }

    pub async fn close(self) {
        let _ = self.http.delete(&self.base).send().await;
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
