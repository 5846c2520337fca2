/* Live console pages, with no external script.
 *
 * A Run page (#run-live) watches its Run through the portal's API (?watch=true with a
 * fieldSelector, from the page's resourceVersion); on every change it fetches the page again
 * and swaps the sections marked data-live (phase, reason, pod, timing, outputs, conditions,
 * timeline), until the Run has finished. A WorkflowRun page uses the same #run-live element
 * and watches its Runs too (data-runs-watch-url: a labelSelector on the run's uid), so its
 * step graph moves as each step's Run does. A list page (#result_list with data-watch-url on
 * #k-live-list) watches its kind's collection and swaps the table's rows after a change
 * (not while rows are selected). The overview reloads its tiles every data-live-refresh ms.
 * A watch that ends (the server's timeout) reconnects; one that fails falls back to polling.
 */
(function () {
  "use strict";
  var FALLBACK_MS = 5000;

  function fetchPage(url) {
    return fetch(url || window.location.href, {credentials: "same-origin", headers: {"X-Requested-With": "live"}})
      .then(function (r) { if (!r.ok) { throw new Error("HTTP " + r.status); } return r.text(); })
      .then(function (html) { return new DOMParser().parseFromString(html, "text/html"); });
  }

  function swap(fresh, selector) {
    var changed = 0;
    document.querySelectorAll(selector).forEach(function (old) {
      var key = old.getAttribute("data-live");
      var sel = key === null ? selector : "[data-live=\"" + key + "\"]";
      var replacement = fresh.querySelector(sel);
      if (replacement && replacement.innerHTML !== old.innerHTML) {
        // keep open/closed <details> as the reader left them
        var open = Array.prototype.map.call(old.querySelectorAll("details"), function (d) { return d.open; });
        old.innerHTML = replacement.innerHTML;
        old.querySelectorAll("details").forEach(function (d, i) { if (i < open.length) { d.open = open[i]; } });
        changed += 1;
      }
    });
    return changed;
  }

  /* Read a watch stream: onEvent(event) per line; resolves with the last resourceVersion. */
  function watch(url, resourceVersion, onEvent, controller) {
    if (resourceVersion) { url = url.replace(/([?&])resourceVersion=[^&]*&?/, "$1").replace(/[?&]$/, ""); }
    var full = url + (url.indexOf("?") < 0 ? "?" : "&") + "timeoutSeconds=50&allowWatchBookmarks=true" +
      (resourceVersion ? "&resourceVersion=" + encodeURIComponent(resourceVersion) : "");
    return fetch(full, {credentials: "same-origin", signal: controller.signal, headers: {"Accept": "application/json"}})
      .then(function (response) {
        if (!response.ok || !response.body) { throw new Error("HTTP " + response.status); }
        var reader = response.body.getReader(), decoder = new TextDecoder(), buffer = "";
        var version = resourceVersion;
        function pump() {
          return reader.read().then(function (chunk) {
            if (chunk.done) { return version; }
            buffer += decoder.decode(chunk.value, {stream: true});
            var lines = buffer.split("\n");
            buffer = lines.pop();
            lines.forEach(function (line) {
              if (!line.trim()) { return; }
              var event;
              try { event = JSON.parse(line); } catch (e) { return; }
              if (event.type === "ERROR") { version = ""; throw new Error("watch expired"); }
              var meta = event.object && event.object.metadata;
              if (meta && meta.resourceVersion) { version = meta.resourceVersion; }
              if (event.type !== "BOOKMARK") { onEvent(event); }
            });
            return pump();
          });
        }
        return pump();
      });
  }

  function follow(url, version, onEvent, shouldStop) {
    var controller = new AbortController();
    function again(v) {
      if (shouldStop()) { return; }
      watch(url, v, onEvent, controller).then(again, function () {
        if (shouldStop()) { return; }
        setTimeout(function () { onEvent({type: "POLL"}); again(""); }, FALLBACK_MS);
      });
    }
    again(version);
    return controller;
  }

  function debounce(fn, ms) {
    var timer = null;
    return function () { clearTimeout(timer); timer = setTimeout(fn, ms); };
  }

  /* ---- a Run page */
  var run = document.getElementById("run-live");
  if (run) {
    var active = run.dataset.active === "1", busy = false, pending = false;
    var refresh = function () {
      if (busy) { pending = true; return; }
      busy = true;
      fetchPage().then(function (fresh) {
        swap(fresh, "[data-live]");
        var state = fresh.getElementById("run-live");
        active = !!state && state.dataset.active === "1";
        run.dataset.active = active ? "1" : "0";
        var tools = fresh.querySelector(".object-tools"), mine = document.querySelector(".object-tools");
        if (tools && mine) { mine.innerHTML = tools.innerHTML; }
        document.dispatchEvent(new CustomEvent("kruntimes:run-refreshed", {detail: {active: active}}));
      }).catch(function () {}).then(function () {
        busy = false;
        if (pending) { pending = false; refresh(); }
      });
    };
    var soon = debounce(refresh, 200);
    document.addEventListener("kruntimes:refresh", soon);
    if (active) {
      // a WorkflowRun page also follows its Runs (data-runs-watch-url, by the controller's label)
      var urls = [run.dataset.watchUrl, run.dataset.runsWatchUrl].filter(function (u) { return !!u; });
      var controllers = [];
      urls.forEach(function (url) {
        controllers.push(follow(url, run.dataset.resourceVersion, soon, function () {
          if (!active) { controllers.forEach(function (c) { c.abort(); }); }
          return !active;
        }));
      });
    }
  }

  /* ---- a list page */
  var list = document.getElementById("k-live-list");
  if (list && document.getElementById("result_list")) {
    var selected = function () { return !!document.querySelector("#result_list input.action-select:checked"); };
    var refreshList = debounce(function () {
      if (selected()) { return; }
      fetchPage().then(function (fresh) {
        if (!selected()) { swap(fresh, "#result_list"); swap(fresh, ".paginator"); }
      }).catch(function () {});
    }, 1000);
    follow(list.dataset.watchUrl, "", refreshList, function () { return false; });
  }

  /* ---- the overview */
  var overview = document.getElementById("overview");
  var every = document.querySelector("[data-live-refresh]");
  if (overview && every) {
    var ms = parseInt(every.dataset.liveRefresh, 10) || 30000;
    every.addEventListener("click", function (e) {
      e.preventDefault();
      fetchPage().then(function (fresh) { swap(fresh, "#overview"); });
    });
    setInterval(function () {
      if (document.visibilityState === "visible") {
        fetchPage().then(function (fresh) { swap(fresh, "#overview"); }).catch(function () {});
      }
    }, ms);
  }
})();
