//# allFunctionsCalledOnLoad
/*
 * adlink widget: the publisher's one tag.
 *
 *   <script async src="https://ADLINK_HOST/widget.js" data-api-key="demo" data-site-id="demo"></script>
 *
 * Attributes of the tag:
 *   data-api-key, data-site-id  the partner's key and site (required)
 *   data-base                   the adlink server's base URL; default: where this script came from
 *   data-loc, data-lang         the page's market (ISO 3166 country, ISO 639-1 language);
 *                               default: from <html lang="de-DE">
 *   data-auto="false"           do not place ads in the page; only provide window.adlink
 *   data-label                  the ad box's label; default: "Anzeige", "Publicité", ...
 *                               in the page's language, "Sponsored" in English and others
 *   data-link-density           in-text links per 1,000 words of the page's text, default 5
 *                               (a page with text gets at least one); "0": none
 *   data-early="true"           start the module before the server's answer where the
 *                               page is likely unseen ("Starting early"); off by default
 *   data-box                    the id of the ad box's slot: the box goes into the one
 *                               element with that id, none where the page has several;
 *                               without it, the page's one data-adlink-box element outside
 *                               its comments, else after the last paragraph of its main text
 * On any element of the page, data-adlink keeps the widget out of it: no in-text links,
 * none of its text matched. With data-box, only the tag decides where the box goes: a
 * reader's comment can hold any markup of the page's own.
 *
 * The first line asks V8 to compile every function of this script as it loads (on a
 * background thread where the browser streams the script in), rather than each on its
 * first call on the page's thread, where a first view's ads wait for it
 * (docs/PERFORMANCE.md, "Where the rest of a first view goes").
 *
 * A page whose language names no country (<html lang="fr">) gets the ads of the one market
 * in that language, none when no market runs in it (see docs/API.md).
 *
 * What it does: it asks the server for the ads of this page (/v2/page/link). With
 * links it places them: in-text links, one an ad, on the first occurrence of its longest
 * phrase in the page's visible text (at most data-link-density per 1,000 words), and an
 * ad box (title, price, logo) for ads with a picture. While the
 * server has not analysed the page yet (pending), it matches the page's main text in
 * the page with the server's own matcher (matcher.wasm over the country's shard) and
 * places those ads the same way, so even the first view has ads. With data-early="true",
 * where the page is likely unseen, the module and the shard start with the first
 * requests and are dropped if the server has the page's ads ("Starting early" below). Requests start
 * when the script runs; reading and changing the page wait for the DOM.
 *
 * The one global, window.adlink:
 *   adlink.ready                Promise of {source: "server"|"local"|"none", links: [...]},
 *                               settled once the page's ads are placed
 *   adlink.search(q, options)   Promise of {link: [...]}: q matched in the page, the answer
 *                               /v2/search/link gives for the same parameters. options:
 *                               loc, lang, "ctx.dist", q_operator, ad_type, size,
 *                               distinct_advertiser, fields, "logo.dim", yk_tag
 *   adlink.matchText(text, options)  Promise of {link: [...]} for any text, as a page;
 *                               as /v2/page/link, by the country alone (no lang)
 *   adlink.watch(root)          reports the ad links the page placed itself under root
 *                               (default: the document), the results of adlink.search, once
 *                               each was seen, as the widget's own: an ad matched in the page
 *                               bills only with the click token its impression gives its
 *                               link; returns how many links it watches
 *   adlink.refresh()            removes the ads placed and places the current page's,
 *                               for a single-page app that changed the page and its URL;
 *                               returns the new adlink.ready
 *   adlink.config               the configuration read from the tag
 *   adlink.timing               {start, firstAd, steps}: performance.now() when the widget
 *                               started and when the first ad was in the DOM; steps are
 *                               the milliseconds from start to each step of the first view:
 *                               manifest, page_link (answers in hand), compiled (the module),
 *                               initialized (its Go runtime), shard, loaded (load_shard),
 *                               text (the page's text read), need and fragments (a large
 *                               market's: its answer named fragments, they loaded), matched;
 *                               early (the module started before the server's answer, see
 *                               "Starting early") and dropped (the answer had the ads).
 *                               Each step, and first_ad, is also a User Timing mark
 *                               "adlink:<step>", so a browser's performance tools show it.
 *                               outerPaint: the milliseconds the last look for paint
 *                               outside elements' boxes took (see covered), once one ran;
 *                               outerScans: how many such looks ran
 */
(function () {
  "use strict";
  // The tag is on the page twice. An element named adlink is no widget:
  // window.adlink returns it, but not as the window's own property.
  if (Object.prototype.hasOwnProperty.call(window, "adlink") && window.adlink && window.adlink.config) return;

  // The page's markup may name an element after a method or property of
  // document (DOM clobbering: a user's comment with an <img
  // name="querySelector">, or a named <form>, <embed>, <object> or
  // <iframe>), which then shadows document's own: the widget takes them
  // from Document's prototype.
  var docProto = Document.prototype;
  function docProp(name) {
    var d = Object.getOwnPropertyDescriptor(docProto, name);
    return d && d.get ? d.get.call(document) : document[name];
  }
  function docFn(name) {
    var f = docProto[name];
    return function () { return f.apply(document, arguments); };
  }
  var $$ = docFn("querySelectorAll"),
    createElement = docFn("createElement"), createTextNode = docFn("createTextNode"), createRange = docFn("createRange"),
    createTreeWalker = docFn("createTreeWalker"), onDocument = docFn("addEventListener"), byTag = docFn("getElementsByTagName");

  // currentScript is null where the browser names no running script (the
  // tag in a shadow root, or loaded as a module), and another element when
  // the page names one currentScript (a named <img>, <form> or <embed>,
  // which a user's comment may hold, shadows document's own): only a script
  // element is the tag. Without it, the tag is the page's one script
  // element of widget.js with data-api-key: with several (a comment's markup
  // may hold an inert copy, its data-base another server's), none.
  var script = docProp("currentScript");
  if (!(script instanceof HTMLScriptElement)) {
    script = $$('script[src*="widget.js"][data-api-key]');
    script = script.length === 1 && script[0];
  }
  var data = (script && script.dataset) || {};
  // <html lang> is a BCP 47 tag: its region, if any, is the first two-letter
  // subtag after the language; "es-419" and "zh-Hant" name no country. A
  // one-letter subtag starts extensions or private use ("de-u-co-phonebk",
  // "x-de"): no region after it.
  var tags = (docProp("documentElement").lang || "").split(/[-_]/), pageLoc = "";
  for (var i = 0; i < tags.length && tags[i].length > 1 && !pageLoc; i++) {
    if (i && /^[a-z]{2}$/i.test(tags[i])) pageLoc = tags[i];
  }
  if (/^uk$/i.test(pageLoc)) pageLoc = "gb"; // "en-UK", a common slip: ISO 3166 writes GB

  var base = (data.base || (script && script.src ? script.src.replace(/\/[^\/]*$/, "") : location.origin)).replace(/\/+$/, "");
  var density = Number(data.linkDensity);
  var config = {
    apiKey: data.apiKey || "",
    siteId: data.siteId || "",
    base: base,
    loc: (data.loc || pageLoc).toLowerCase(),
    lang: (data.lang || (/^[a-z]{2}$/i.test(tags[0]) ? tags[0] : "")).toLowerCase(),
    auto: data.auto !== "false",
    early: data.early === "true",
    label: data.label || "",
    box: data.box || "",
    linkDensity: data.linkDensity && density >= 0 ? density : 5
  };
  var timing = { start: performance.now(), firstAd: 0, firstToken: 0, steps: {} };
  function mark(step) {
    if (timing.steps[step]) return;
    timing.steps[step] = performance.now() - timing.start;
    if (performance.mark) performance.mark("adlink:" + step);
  }
  var encoder = new TextEncoder();
  var decoder = new TextDecoder();
  var FIELDS = "price,logo";
  // A server that takes the connection and never answers must not keep
  // adlink.ready from settling (without AbortSignal.timeout, it can): 10 s
  // for an answer, 60 s for the module or a shard, hundreds of KB.
  var TIMEOUT = 10000, DOWNLOAD_TIMEOUT = 60000;
  var MAX_URL = 2048; // the longest page address /v2/page/link takes, in bytes

  // fetchOptions are a request's options; signal, when given, can abort it
  // too (a first view's early download, dropped: see early).
  function fetchOptions(ms, signal) {
    var o = { mode: "cors", credentials: "omit" };
    if (window.AbortSignal && AbortSignal.timeout) o.signal = AbortSignal.timeout(ms);
    if (signal) o.signal = o.signal && AbortSignal.any ? AbortSignal.any([o.signal, signal]) : signal;
    return o;
  }

  // wellFormed replaces unpaired surrogates, which page text and titles can
  // hold, with U+FFFD: encodeURIComponent throws on them.
  function wellFormed(v) {
    v = String(v);
    return v.toWellFormed ? v.toWellFormed() : v.replace(/[\uD800-\uDBFF][\uDC00-\uDFFF]|[\uD800-\uDFFF]/g, function (m) { return m.length === 2 ? m : "\uFFFD"; });
  }

  function query(params) {
    var parts = [];
    // Own keys only: a page may have added to Object.prototype.
    Object.keys(params).forEach(function (k) {
      [].concat(params[k]).forEach(function (v) { // an array is a repeated parameter
        if (v !== undefined && v !== null && v !== "") parts.push(encodeURIComponent(wellFormed(k)) + "=" + encodeURIComponent(wellFormed(v)));
      });
    });
    return parts.join("&");
  }

  // keepalive has the request outlive the page (an impression beacon sent
  // as the reader leaves: see flush).
  function getJSON(path, params, keepalive) {
    var o = fetchOptions(TIMEOUT);
    o.keepalive = !!keepalive;
    return fetch(config.base + path + "?" + query(params), o).then(function (r) {
      function out(body) { return { status: r.status, body: body, headers: r.headers }; }
      return r.json().then(out, function () { return out(null); });
    });
  }

  // ---- The WASI shim: what a Go wasip1 reactor imports. Starting, a reactor
  // asks for args, environment, the clock, random bytes and stdio's state; after
  // that only the clock. matcher.wasm is built started (wasm/module.Preinit), so
  // a page's asks only the clock; the rest stays for any other Go reactor.
  // Nothing may block the page, so poll_oneoff returns at once.
  var ENV = "GOGC=200";

  function wasi(getMemory) {
    var EBADF = 8, out = "";
    function view() { return new DataView(getMemory().buffer); }
    function zero2(a, b) { var v = view(); v.setUint32(a, 0, true); v.setUint32(b, 0, true); return 0; }
    return {
      args_sizes_get: zero2,
      // One variable: GOGC=200. matcher.wasm's runtime read its own when it
      // was built (see wasm/matcher.go); this is for a reactor started here.
      environ_sizes_get: function (count, size) {
        var v = view();
        v.setUint32(count, 1, true);
        v.setUint32(size, ENV.length + 1, true);
        return 0;
      },
      args_get: function () { return 0; },
      environ_get: function (environ, buf) {
        var m = new Uint8Array(getMemory().buffer);
        for (var i = 0; i < ENV.length; i++) m[buf + i] = ENV.charCodeAt(i);
        m[buf + ENV.length] = 0;
        view().setUint32(environ, buf, true);
        return 0;
      },
      clock_time_get: function (id, precision, ptr) {
        var ms = id === 0 ? Date.now() : performance.timeOrigin + performance.now();
        view().setBigUint64(ptr, BigInt(Math.round(ms * 1e3)) * BigInt(1000), true);
        return 0;
      },
      random_get: function (ptr, len) {
        for (var off = 0; off < len; off += 65536) {
          crypto.getRandomValues(new Uint8Array(getMemory().buffer, ptr + off, Math.min(65536, len - off)));
        }
        return 0;
      },
      fd_write: function (fd, iovs, iovsLen, nwritten) {
        var v = view(), n = 0;
        for (var i = 0; i < iovsLen; i++) {
          var p = v.getUint32(iovs + 8 * i, true), l = v.getUint32(iovs + 8 * i + 4, true);
          out += decoder.decode(new Uint8Array(getMemory().buffer, p, l));
          n += l;
        }
        var nl = out.lastIndexOf("\n");
        if (nl >= 0) { console.log("adlink matcher: " + out.slice(0, nl)); out = out.slice(nl + 1); }
        view().setUint32(nwritten, n, true);
        return fd === 1 || fd === 2 ? 0 : EBADF;
      },
      fd_read: function () { return EBADF; },
      fd_close: function () { return EBADF; },
      fd_fdstat_get: function (fd, ptr) {
        if (fd > 2) return EBADF;
        var v = view();
        v.setUint8(ptr, 2); // character device
        v.setUint16(ptr + 2, 0, true);
        v.setBigUint64(ptr + 8, BigInt(0xffffffff), true);
        v.setBigUint64(ptr + 16, BigInt(0xffffffff), true);
        return 0;
      },
      fd_fdstat_set_flags: function () { return 0; },
      fd_prestat_get: function () { return EBADF; }, // no preopened directories
      fd_prestat_dir_name: function () { return EBADF; },
      poll_oneoff: function (inPtr, outPtr, nsubs, nevents) {
        // Report every subscription as ready at once instead of sleeping.
        var v = view();
        for (var i = 0; i < nsubs; i++) {
          var s = inPtr + 48 * i, e = outPtr + 32 * i;
          v.setBigUint64(e, v.getBigUint64(s, true), true);
          v.setUint16(e + 8, 0, true);
          v.setUint8(e + 10, v.getUint8(s + 8));
        }
        v.setUint32(nevents, nsubs, true);
        return 0;
      },
      proc_exit: function (code) { throw new Error("adlink matcher exited with " + code); },
      sched_yield: function () { return 0; }
    };
  }

  // ---- The matcher: one compiled module, one instance per shard; current
  // is the shard each market's latest manifest named.
  var manifests = {}, matchers = {}, current = {}, modules = {};

  // manifest is kept until ten minutes before its site token ("kid.exp.mac",
  // exp in unix seconds) expires, so that click URLs made later carry a
  // fresh one; at least a minute, so that a wrong clock cannot make every
  // match fetch it again; and at most five minutes, its HTTP max-age, as
  // the advertisers it excludes (their budget spent) change.
  var MANIFEST_MS = 300000;
  function manifest(loc, lang) {
    var key = loc + "-" + lang, c = manifests[key];
    if (!c || Date.now() >= c.until) {
      c = manifests[key] = { until: Infinity };
      c.p = getJSON("/v2/shards", { api_key: config.apiKey, site_id: config.siteId, loc: loc, lang: lang }).then(function (r) {
        // A refused request's message names the parameter, as /v2/search/link's would.
        var e = r.body && r.body.error;
        if (e && e.message) throw new Error("adlink: " + e.message);
        if (r.status !== 200 || !r.body || !r.body.shard) throw new Error("adlink: no shard for " + key + " (HTTP " + r.status + ")");
        if (!r.body.matcher) throw new Error("adlink: the server has no matcher.wasm");
        var exp = r.body.tok ? +String(r.body.tok).split(".")[1] : NaN;
        if (exp > 0) c.until = Date.now() + Math.max(60, exp - Date.now() / 1000 - 600) * 1000;
        c.until = Math.min(c.until, Date.now() + MANIFEST_MS);
        mark("manifest");
        clickOrigins[originOf(r.body.redirect_url || config.base)] = true;
        return r.body;
      });
      c.p.catch(function () { if (manifests[key] === c) delete manifests[key]; });
    }
    return c.p;
  }

  function get(url, signal) {
    return fetch(config.base + url, fetchOptions(DOWNLOAD_TIMEOUT, signal)).then(function (r) {
      if (!r.ok) {
        var e = new Error("adlink: " + url.split("?")[0] + " " + r.status);
        e.status = r.status;
        throw e;
      }
      return r;
    });
  }

  function compile(url, signal) {
    // One module per URL: the manifest's URL names the module's version, and
    // a page open across a deploy gets shards only the new one reads.
    if (!modules[url]) {
      // Streaming compiles while the bytes arrive; it needs application/wasm.
      // Where it fails for another reason than a broken module (a proxy
      // changed the type), the bytes are compiled: the second fetch comes from
      // the cache. (A clone kept for that would hold a second copy of the body
      // until it is collected.)
      var bytes = function () { return get(url, signal).then(function (r) { return r.arrayBuffer(); }).then(WebAssembly.compile); };
      var p = modules[url] = !WebAssembly.compileStreaming ? bytes() : WebAssembly.compileStreaming(get(url, signal)).catch(function (e) {
        // Not after a broken module, an HTTP error or the download's time
        // running out: a second download would only wait as long again.
        if (e instanceof WebAssembly.CompileError || /^adlink:/.test(e.message) || e.name === "TimeoutError" || e.name === "AbortError") throw e;
        return bytes();
      });
      p.then(function () { mark("compiled"); }, function () { if (modules[url] === p) delete modules[url]; });
    }
    return modules[url];
  }

  // match runs the module's export kind over the shard that answers the
  // market, as /v2/search/link picks its index. The module and the shard
  // download together, and the Go runtime starts while the shard may still be
  // on its way. The click URLs take the current manifest's token.
  function match(loc, lang, kind, params) {
    keepEarly(); // the module is wanted: what a first view started early stays
    lastMarket = [loc, lang];
    return manifest(loc, lang).then(function (m) {
      forget(loc + "-" + lang, m.shard.sha256);
      // loc=use_geo and lang=use_locale as the server resolved them for the
      // manifest, which names the shard for the result: the page's module
      // then filters as the server's endpoints would.
      params.loc = m.loc;
      if (params.lang !== undefined) params.lang = m.lang;
      return matcher(m).then(function (run) {
        params.redirect_url = m.redirect_url || config.base;
        params.tok = m.tok;
        // Advertisers whose daily budget is spent are left out; a paced one
        // is shown with the manifest's probability, drawn per match.
        var ex = (m.exclude || []).concat((m.pace || []).filter(function (p) { return Math.random() >= p.show; }).map(function (p) { return p.group; }));
        if (ex.length) params.exclude = ex.join(",");
        return run(kind, params);
      });
    });
  }

  // matcher is the promise of the function that runs the module over the
  // shard the manifest m names (load), loading both the first time. signal,
  // when given, drops the downloads and keeps the Go runtime from starting
  // once it aborts (early).
  function matcher(m, signal) {
    var sha = m.shard.sha256;
    if (!matchers[sha]) {
      // The compiled module comes in a task of its own: the runtime starts
      // in it.
      var running = compile(m.matcher.url, signal).then(function (module) {
        if (signal && signal.aborted) throw signal.reason || new Error("adlink: aborted");
        return instantiate(module);
      }).then(yieldTask);
      var shard = get(m.shard.url, signal).then(function (r) { return r.arrayBuffer(); }).then(function (b) { mark("shard"); return new Uint8Array(b); });
      var p = matchers[sha] = Promise.all([running, shard]).then(function (got) {
        if (signal && signal.aborted) throw signal.reason || new Error("adlink: aborted");
        return load(got[0], got[1], function () { if (matchers[sha] === p) delete matchers[sha]; }, m.shard.url);
      }).then(yieldTask);
      p.catch(function () { if (matchers[sha] === p) delete matchers[sha]; });
    }
    return matchers[sha];
  }

  // forget lets go of the instance of a shard no market's manifest names
  // any more (the server has a new catalog): its Go runtime holds the whole
  // shard, and a page can stay open for days. Calls under way finish.
  function forget(key, sha) {
    var old = current[key];
    current[key] = sha;
    if (!old || old === sha) return;
    for (var k in current) if (current[k] === old) return;
    delete matchers[old];
  }

  // yieldTask resolves to its argument in a new task, so that the page can
  // handle input between the module's steps: starting the Go runtime,
  // loading the shard and matching are each tens of ms on a first view
  // (V8 compiles each function on its first call), one long task together.
  //
  // The module runs on the page's thread. A Web Worker (made from a blob of
  // this code) cut the blocking time, but each way of starting it made the
  // first ad later than it saved (BenchmarkFirstView; docs/PERFORMANCE.md).
  // Only a page's first views match here at all: the server has its ads
  // within seconds.
  function yieldTask(v) {
    if (window.scheduler && scheduler.yield) return scheduler.yield().then(function () { return v; });
    return new Promise(function (resolve) { setTimeout(function () { resolve(v); }, 0); });
  }

  // instantiate makes an instance of the module. matcher.wasm is built with
  // its Go runtime started (wasm/module.Preinit), so its _initialize does
  // nothing; the call stays, as a reactor's host makes it.
  function instantiate(module) {
    var ex;
    var inst = new WebAssembly.Instance(module, { wasi_snapshot_preview1: wasi(function () { return ex.memory; }) });
    ex = inst.exports;
    ex._initialize();
    mark("initialized");
    return ex;
  }

  // load puts the shard into a running module and returns the function that
  // runs its exports; drop forgets the instance once it has trapped. A
  // large market's shard comes without its ads' strings: an answer then
  // names the fragments it needs ({"need":[k,...]}), fetched from url + "/k"
  // once each, and the call is made again.
  function load(ex, shard, drop, url) {
    // BigInt by calls, not literals (0n): a browser without BigInt would
    // refuse the whole script, the server's ads too; here only the page's
    // matching fails.
    var dead = false, ZERO = BigInt(0), SHIFT = BigInt(32), MASK = BigInt(0xffffffff), fragments = {};
    function put(bytes) {
      var p = ex.alloc(bytes.length) >>> 0;
      new Uint8Array(ex.memory.buffer, p, bytes.length).set(bytes); // a fresh view: memory may have grown
      return p;
    }
    // enter runs f in the module; after a trap the Go runtime's state is
    // undefined, so no call may enter it again and the next match loads a
    // new instance.
    function enter(f) {
      if (dead) throw new Error("adlink: the matcher has stopped");
      try {
        return f();
      } catch (e) {
        dead = true;
        drop();
        throw e;
      }
    }
    var st = ex.load_shard(put(shard), shard.length);
    if (st !== 0) throw new Error("adlink: the shard did not load (" + st + ")");
    mark("loaded");
    function fragment(k) {
      k = k >>> 0;
      if (!fragments[k]) {
        var f = fragments[k] = get(url + "/" + k).then(function (r) { return r.arrayBuffer(); }).then(function (b) {
          var bytes = new Uint8Array(b);
          var st = enter(function () {
            var p = put(bytes), st = ex.load_fragment(k, p, bytes.length);
            if (st !== 0) ex.free(p); // the module keeps only what it loaded
            return st;
          });
          if (st !== 0) throw new Error("adlink: fragment " + k + " did not load (" + st + ")");
        });
        f.catch(function (e) {
          if (fragments[k] === f) delete fragments[k];
          // Gone: the server has another catalog now (a deploy). The next
          // match asks for a new manifest and loads the shard it names.
          if (e.status === 404) {
            manifests = {};
            drop();
          }
        });
      }
      return fragments[k];
    }
    function ask(kind, req) {
      var text = enter(function () {
        var p = put(req), r = ex[kind](p, req.length), out = null;
        ex.free(p);
        if (r !== ZERO) {
          var rp = Number(r >> SHIFT), rn = Number(r & MASK);
          out = decoder.decode(new Uint8Array(ex.memory.buffer, rp, rn));
          ex.free(rp);
        }
        return out;
      });
      if (text === null) throw new Error("adlink: the matcher refused the request");
      var body = JSON.parse(text);
      if (body.error) throw new Error("adlink: " + body.error.message);
      return body;
    }
    return function (kind, params) {
      params.api_key = config.apiKey;
      params.site_id = config.siteId;
      var req = encoder.encode(query(params)), body = ask(kind, req);
      if (!body.need) return body;
      mark("need");
      return Promise.all(body.need.map(fragment)).then(function () {
        mark("fragments");
        body = ask(kind, req);
        if (body.need) throw new Error("adlink: the shard's fragments did not load");
        return body;
      });
    };
  }

  // market is the loc and lang of a call, the tag's by default; use_geo and
  // use_locale stay for the server to resolve (see match).
  function market(o) {
    var loc = o.loc !== undefined ? o.loc : config.loc;
    var lang = o.lang !== undefined ? o.lang : config.lang;
    return [String(loc || "").toLowerCase(), String(lang || "").toLowerCase()];
  }

  function search(q, options) {
    var o = Object.assign({}, options || {});
    var m = market(o);
    o.q = q; o.loc = m[0]; o.lang = m[1];
    return match(m[0], m[1], "match_search", o);
  }

  // matchText matches as /v2/page/link does, whose page context has no
  // language: by the country alone, whatever options.lang says.
  function matchText(text, options) {
    var o = Object.assign({ fields: FIELDS }, options || {});
    var loc = market(o)[0];
    delete o.lang;
    o.text = text; o.loc = loc;
    return match(loc, "", "match_page", o);
  }

  // ---- Reading the page.
  var SKIP = /^(A|SCRIPT|STYLE|NOSCRIPT|TEXTAREA|INPUT|SELECT|OPTION|BUTTON|LABEL|CODE|PRE|IFRAME|TEMPLATE|NAV|HEADER|FOOTER|ASIDE|FIGCAPTION|H1|H2|H3|H4|H5|H6)$/i;
  // Classes and ids of the parts of a page around its main text (comments,
  // galleries' legends, related links), as Readability tells them
  // (Readability.js: unlikelyCandidates, okMaybeItsACandidate).
  var UNLIKELY = /-ad-|ai2html|banner|breadcrumbs|combx|comment|community|cover-wrap|disqus|extra|footer|gdpr|header|legends|menu|related|remark|replies|rss|shoutbox|sidebar|skyscraper|social|sponsor|supplemental|ad-break|agegate|pagination|pager|popup|yom-remote/i;
  var MAYBE = /and|article|body|column|content|main|mathjax|shadow/i;
  // Of those, the names of a page's comments.
  var COMMENTS = /comment|disqus|repl/i;
  var HTML = "http://www.w3.org/1999/xhtml";

  // contentRoot is where the page's own text is: its one article (comments
  // may be articles inside it, and a sidebar's teasers do not count), in
  // its main part when it marks one; the main part, else the body, where it
  // has several, as a front page lists teasers, rather than the first. A
  // main part or an article in the page's comments (a comment's markup, or
  // the page's own for each comment) is none of the page's: only the words
  // of comments count there, as a layout's wrapper around the page's
  // article may have a class of "header" or "menu".
  function contentRoot() {
    var body = docProp("body"), main = Array.prototype.find.call($$("main, [role=main]"), function (m) { return !aroundText(m, body, COMMENTS); }) || body;
    var articles = Array.prototype.filter.call(main.querySelectorAll("article"), function (a) {
      return !(a.parentElement && a.parentElement.closest("article, aside, nav, header, footer")) && !aroundText(a, main, COMMENTS);
    });
    return articles.length === 1 ? articles[0] : main;
  }

  // skipped tells whether a link may not go around node: the content root
  // itself can stand in a link or an aside. A <form> inside the page's main
  // text (a comment form) counts, and so does a part around the main text
  // (comments, a gallery's legends); a form around it does not: some sites
  // wrap the whole page in one (ASP.NET WebForms). Text hidden from the reader
  // (aria-hidden, inert, a dialog not open) counts. An <a> made by
  // createElement is HTML's; in SVG or MathML it would be no link, or break
  // the drawing. What it found for each element on the way up is kept in
  // memo (a Map, for one root): a page's text nodes share their ancestors,
  // and a long page has tens of thousands.
  function skipped(node, root, memo) {
    var path = [], found = false;
    for (var el = node.parentNode, inside = true; el; el = el.parentNode) {
      if (memo.has(el)) {
        found = memo.get(el);
        break;
      }
      path.push(el);
      if (el === root) inside = false;
      // Attributes only: isContentEditable would recompute styles after every link placed.
      if (el.nodeType === 1 && (el.namespaceURI !== HTML || SKIP.test(el.nodeName) || hiddenByMarkup(el) ||
          el.hasAttribute("contenteditable") || el.hasAttribute("data-adlink") || (inside && (el.localName === "form" || around(el))))) {
        found = true;
        break;
      }
    }
    for (var i = 0; i < path.length; i++) memo.set(path[i], found);
    return found;
  }

  // around tells whether an element's class or id names a part of the page
  // around its main text, or, with re, what re names.
  function around(el, re) {
    var k = (el.getAttribute("class") || "") + " " + el.id;
    return re ? re.test(k) : k.length > 1 && UNLIKELY.test(k) && !MAYBE.test(k);
  }

  // aroundText tells whether el stands in a part of the page around its
  // main text (or one re names), below root.
  function aroundText(el, root, re) {
    for (var e = el; e && e !== root; e = e.parentElement) if (around(e, re)) return true;
    return false;
  }

  // inForm tells whether el stands in a form inside root (a comment form),
  // not one around it.
  function inForm(el, root) {
    var f = el.closest("form");
    return !!f && f !== root && root.contains(f);
  }

  // hiddenByMarkup tells whether an element's markup keeps it from the
  // reader, whatever its style.
  function hiddenByMarkup(el) {
    return el.getAttribute("aria-hidden") === "true" || el.hasAttribute("inert") || (el.localName === "dialog" && !el.open);
  }

  // textNodes is the text nodes under root that links may go in. Whether
  // an element is rendered is asked once for all its text nodes: a page
  // can hold a long text as one element's lines between <br>s, and the box
  // of an element of thousands of lines takes as long to work out each time.
  function textNodes(root) {
    var out = [], shownEl = new Map(), memo = new Map();
    var w = createTreeWalker(root, NodeFilter.SHOW_TEXT);
    for (var n = w.nextNode(); n; n = w.nextNode()) {
      if (!n.nodeValue.trim() || skipped(n, root, memo)) continue;
      var p = n.parentNode;
      if (!shownEl.has(p)) shownEl.set(p, rendered(p));
      if (shownEl.get(p)) out.push(n);
    }
    return out;
  }

  var BLOCKS = "h1, h2, h3, p, li, td, blockquote, figcaption, dd";
  // MAX_TEXT bounds the text handed to the module, in UTF-16 units: the
  // server reads at most 256 KB of a page's text, and the module's memory,
  // once grown, stays grown.
  var MAX_TEXT = 256 * 1024;

  // rendered tells whether an element is shown: text in a hidden one
  // (display:none, visibility:hidden, opacity:0, zero-size or off the page)
  // is no part of what the reader sees, neither to match nor to link. With
  // all, every element up to the body counts, and a blend (see onPage).
  function rendered(el, all) {
    if (el.checkVisibility ? !el.checkVisibility({ visibilityProperty: true, opacityProperty: true }) : !el.getClientRects().length) return false;
    return onPage(el.getBoundingClientRect(), el, all ? null : el, all);
  }

  // onPage tells whether a box r (of text in element el) can be seen: not
  // zero-size or a few pixels (scaled down to a speck), nor off the page's
  // top or left edge, where "off-screen" text goes, nor clipped to almost
  // nothing by an element from el up to "up" that hides its overflow (a
  // "screen reader only" one), nor faint: the opacity of those elements
  // together below one half, a filter's opacity() with theirs (a comment's
  // markup may lay text or a link, almost transparent, over the page, for
  // a reader to click without seeing it). Text or a link (with "text") is
  // not seen where one of them blends its colours into the page's
  // (mix-blend-mode: black text "screen"ed on white is white).
  function onPage(r, el, up, text) {
    if (r.width < 4 || r.height < 4 || r.right + scrollX <= 0 || r.bottom + scrollY <= 0) return false;
    for (var e = el, o = 1; e && e !== docProp("body"); e = e.parentElement) {
      var c = e === el ? r : e.getBoundingClientRect(), st = getComputedStyle(e);
      o *= st.opacity * alpha(st.filter, /opacity\(([\d.e-]+)(%?)/g);
      if (text && st.mixBlendMode !== "normal") return false;
      if ((c.width < 2 || c.height < 2) && (st.overflow !== "visible" || (st.clip && st.clip !== "auto") || (st.clipPath && st.clipPath !== "none"))) return false;
      if (e === up) break;
    }
    return o >= 0.5;
  }

  // shown tells whether the n characters at "at" in a text node are where a
  // reader can see them.
  function shown(node, at, n) {
    var range = createRange();
    range.setStart(node, at);
    range.setEnd(node, at + n);
    return onPage(range.getBoundingClientRect(), node.parentElement, null, 1) && alpha(getComputedStyle(node.parentElement).webkitTextFillColor) >= 0.5;
  }

  // alpha is the product of what re finds in a computed style's value s,
  // a number or a percentage: by default a colour's alpha ("rgba(0, 0, 0,
  // 0.02)", "color(srgb 0 0 0 / 0.02)"), 1 for none. The text's fill is
  // its colour unless set apart: either one transparent, a link in it
  // would be too (a page's "a { color: inherit }").
  function alpha(s, re) {
    var o = 1;
    (s || "").replace(re || /(?:,.*,.*,|\/) *([\d.e-]+)(%?)\)$/, function (m, v, p) { o *= p ? v / 100 : v; });
    return o;
  }

  // lines appends the lines of a block's rendered text (innerText: no
  // script, no hidden element) to out, each one's white space collapsed.
  function lines(s, out) {
    s.split("\n").forEach(function (l) {
      l = l.replace(/\s+/g, " ").trim();
      if (l) out.push(l);
    });
  }

  // pageText is the page's title and main text as the matcher reads them: one
  // block per line, so no phrase runs across two paragraphs; a block inside
  // another counts once, with the outer one. Text in a form inside the main
  // text (a comment form) does not count; a form around it (a page may sit
  // in one) does; a field's value is in no block.
  function pageText() {
    var root = contentRoot(), title = [docProp("title")], text = [];
    var blocks = root.querySelectorAll(BLOCKS);
    for (var i = 0; i < blocks.length; i++) {
      var b = blocks[i], up = b.parentElement && b.parentElement.closest(BLOCKS);
      if ((up && root.contains(up)) || b.closest("[data-adlink], nav, header, footer, aside, [aria-hidden=true], [inert], dialog:not([open])") ||
          inForm(b, root) || aroundText(b, root) || !rendered(b)) continue;
      lines(b.innerText, /^h[12]$/i.test(b.localName) ? title : text);
    }
    if (!blocks.length) lines(root.innerText || root.textContent, text);
    return { title: title.join("\n").slice(0, MAX_TEXT), text: text.join("\n").slice(0, MAX_TEXT) };
  }

  // ---- Placing ads.
  function el(tag, attrs, kids) {
    var e = createElement(tag);
    Object.keys(attrs).forEach(function (k) { e.setAttribute(k, attrs[k]); });
    (kids || []).forEach(function (c) { if (c) e.appendChild(typeof c === "string" ? createTextNode(c) : c); });
    return e;
  }

  // ours holds the ad links the widget made: only they are reported as
  // its own, not the page's markup (a comment) made to look like one.
  var ours = new WeakSet();

  function adLink(l, cls, kids) {
    var a = el("a", { href: l.ad, rel: "sponsored noopener", target: "_blank", "class": cls, title: l.title }, kids);
    ours.add(a);
    return a;
  }

  // web tells whether a URL from an answer is an http(s) one, the only kind
  // an ad or a logo may have: a javascript: URL in an href would run in the
  // page's origin.
  function web(u) { return typeof u === "string" && /^https?:\/\//i.test(u); }

  // inText links each ad once, on the first occurrence of its longest phrase
  // in the page's text: keywords standing together as one ("Apple iPhone
  // 15"), else its longest keyword. The longest phrases go first, the better
  // ads among phrases alike, up to the page's cap (data-link-density per
  // 1,000 words); never inside a link, a heading, a script, a form, hidden
  // text or the widget's own box, nor right beside another of its links.
  function inText(links) {
    var root = contentRoot(), done = Object.create(null), placed = 0, nodes = textNodes(root), phrases = [];
    links.forEach(function (l, rank) {
      if (l.display_type.indexOf("link") < 0 || !web(l.ad)) return;
      // Keywords in a row, as they first occur, may stand together: each
      // run of up to three (brand, model, product word) is a phrase too
      // ("Apple" and "iPhone 15").
      var kws = (l.keywords || []).filter(function (kw) { return typeof kw === "string" && kw; });
      for (var i = 0; i < kws.length; i++) {
        for (var j = i + 1; j <= Math.min(kws.length, i + 3); j++) phrases.push({ l: l, rank: rank, kw: kws.slice(i, j).join(" ") });
      }
    });
    phrases.sort(function (a, b) { return b.kw.length - a.kw.length || a.rank - b.rank; });
    var cap = linkCap(nodes), linked = [];
    // All the text at once, for a quick look before a phrase's search node
    // by node: most runs of keywords stand nowhere.
    var all = nodes.map(function (n) { return squash(n.nodeValue); }).join("\n");
    phrases.forEach(function (p) {
      var l = p.l, kw = p.kw;
      var key = lowerCase(kw); // as long as kw, so the link covers the keyword (İ)
      if (placed >= cap || done[key] || linked.indexOf(l) >= 0 || all.indexOf(squash(key)) < 0) return;
      var re = phrase(key);
      for (var i = 0; i < nodes.length; i++) {
        var n = nodes[i], m = find(n, re);
        if (!m) continue;
        var hit = n.splitText(m.at), rest = hit.splitText(m.n);
        left.set(n, n.nodeValue);
        left.set(rest, rest.nodeValue);
        origin.set(rest, origin.get(n) || n);
        nodes.splice(i + 1, 0, rest); // n keeps the text before the link; hit goes into it
        var a = adLink(l, "adlink-intext", []);
        a.setAttribute("data-adlink", "intext");
        origin.set(a, origin.get(n) || n);
        hit.parentNode.replaceChild(a, hit);
        a.appendChild(hit);
        done[key] = true;
        linked.push(l);
        placed++;
        return;
      }
    });
    return placed;
  }

  // squash is text lower-cased, without soft hyphens, its white space one
  // space.
  function squash(s) { return lowerCase(s).replace(/\u00ad/g, "").replace(/\s+/g, " "); }

  // linkCap is how many in-text links a page's text takes: data-link-density
  // per 1,000 of its words, at least one where it has words and the density
  // is not 0.
  function linkCap(nodes) {
    var words = 0;
    for (var i = 0; i < nodes.length; i++) words += (nodes[i].nodeValue.match(/\S+/g) || []).length;
    return config.linkDensity > 0 && words ? Math.max(1, Math.round(words * config.linkDensity / 1000)) : 0;
  }

  // besideLink tells whether the n characters at "at" in a text node stand
  // right beside an in-text link, with only white space between: "Apple"
  // before a linked "iPhone 15" is the same mention.
  function besideLink(node, at, n) {
    var s = node.nodeValue;
    return (!s.slice(0, at).trim() && isLink(node.previousSibling)) || (!s.slice(at + n).trim() && isLink(node.nextSibling));
  }

  function isLink(n) { return !!n && n.nodeType === 1 && n.getAttribute("data-adlink") === "intext"; }

  // Letters, digits and marks make words; so do the soft hyphen and the
  // zero-width (non-)joiner, which stand inside words ("Handy\u00adhülle"
  // is one word, with no "Handy" in it).
  var WORD = /[\p{L}\p{N}\p{M}\u00ad\u200c\u200d]/u;
  // lowered caches a text node's lower case, {s, lower}, for as long as
  // its text is s. left holds the text that placing a link left in the
  // node before the link and in the rest after it: clear merges them back
  // only while the page has not changed them. origin maps a link and the
  // rest after it to the page's text node they were cut from.
  var lowered = new WeakMap(), left = new WeakMap(), origin = new WeakMap();

  // phrase is a keyword (lower case) as a pattern: a space in it stands for
  // any white space in the page (a no-break space, a line break), which the
  // matcher read as one space, and a soft hyphen may stand between any two
  // characters (the matcher reads across it and leaves it out of keywords).
  function phrase(key) {
    return new RegExp(Array.from(key).map(function (c) {
      return c === " " ? "\\s+" : c.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
    }).join("\u00ad?"), "g");
  }

  // lowerCase lower-cases s keeping its length, offset for offset: a
  // character whose lower case is longer (İ, "i" and a dot) stays as it is.
  function lowerCase(s) {
    var l = s.toLowerCase();
    if (l.length === s.length) return l;
    return s.replace(/[\s\S]/gu, function (c) {
      var lc = c.toLowerCase();
      return lc.length === c.length ? lc : c;
    });
  }

  // find returns where the phrase first stands as whole words in a text
  // node, where the reader sees it and beside no other link, {at, n}, or
  // null.
  function find(node, re) {
    var s = node.nodeValue, c = lowered.get(node);
    if (!c || c.s !== s) lowered.set(node, c = { s: s, lower: lowerCase(s) });
    var lower = c.lower;
    re.lastIndex = 0;
    for (var m = re.exec(lower); m; m = re.exec(lower)) {
      var at = m.index, n = m[0].length;
      if (wordAt(node, at, n) && !besideLink(node, at, n) && shown(node, at, n)) return { at: at, n: n };
      re.lastIndex = m.index + 1;
    }
    return null;
  }

  // wordAt tells whether the n characters at "at" in a text node stand as
  // whole words: no letter just before or after, also across inline markup
  // ("Foto<b>handy</b>" is one word).
  function wordAt(node, at, n) {
    var s = node.nodeValue, word = WORD;
    var before = at > 0 ? s[at - 1] : edge(node, false), after = at + n < s.length ? s[at + n] : edge(node, true);
    return !(before && word.test(before)) && !(after && word.test(after));
  }

  // Elements that run inside a line of text: a word goes on across them.
  var INLINE = /^(a|abbr|b|bdi|bdo|cite|code|data|del|dfn|em|font|i|ins|kbd|mark|q|s|samp|small|span|strong|sub|sup|time|u|var)$/;

  // edge returns the character that goes on from a text node's text after
  // it (forward) or before it, across inline elements only, or "": a line
  // break, a block, a script or any other element ends a word.
  function edge(node, forward) {
    for (var n = node; ;) {
      var next = forward ? n.nextSibling : n.previousSibling;
      while (!next) { // out of inline elements
        n = n.parentNode;
        if (!n || n.nodeType !== 1 || !INLINE.test(n.localName)) return "";
        next = forward ? n.nextSibling : n.previousSibling;
      }
      while (next.nodeType === 1 && INLINE.test(next.localName) && next.firstChild) { // into them
        next = forward ? next.firstChild : next.lastChild;
      }
      if (next.nodeType === 1 && !INLINE.test(next.localName)) return "";
      var v = next.nodeType === 3 ? next.nodeValue : "";
      if (v) return forward ? v[0] : v[v.length - 1];
      n = next; // an empty text node or inline element, a comment: on past it
    }
  }

  var SYMBOLS = { EUR: "\u20ac", USD: "$", GBP: "\u00a3" };
  // Languages that write a decimal comma, and the ad box's label (and its
  // plural, for screen readers) in the page's language; English elsewhere.
  var COMMA = /^(de|fr|es|it|nl|pt|pl|cs|sk|da|sv|nb|no|fi|ru|tr|ro|hu|hr|sl|el|bg|uk)$/;
  var LABELS = {
    de: ["Anzeige", "Anzeigen"], fr: ["Publicit\u00e9", "Publicit\u00e9s"], es: ["Anuncio", "Anuncios"],
    it: ["Annuncio", "Annunci"], nl: ["Advertentie", "Advertenties"], pt: ["An\u00fancio", "An\u00fancios"],
    pl: ["Reklama", "Reklamy"], sv: ["Annons", "Annonser"], da: ["Annonce", "Annoncer"], en: ["Sponsored", "Sponsored"]
  };

  // money writes a price the page's way: "19,99 €" on a German or French
  // page, "$19.99" on an English one. (Intl.NumberFormat's first use in a
  // fresh tab takes longer than matching the page.)
  function money(p) {
    var sym = SYMBOLS[p.currency] || p.currency || "";
    if (COMMA.test(config.lang)) return (p.amount.replace(".", ",") + "\u00a0" + sym).trim();
    return sym.length === 1 ? sym + p.amount : (p.amount + "\u00a0" + sym).trim();
  }

  function box(links) {
    var ads = links.filter(function (l) { return l.display_type.indexOf("widget") >= 0 && web(l.ad); }).slice(0, 4);
    // The slot is the one element with the id the tag names (data-box):
    // where none has it, or several (a comment's markup may copy the id),
    // there is no box. Without data-box, the page's one element with
    // data-adlink-box (earlier versions' slot), outside its comments.
    var slot = config.box ? $$("#" + CSS.escape(config.box)) : Array.prototype.filter.call($$("[data-adlink-box]"), function (s) { return !aroundText(s, docProp("body"), COMMENTS); });
    if (!config.box && !slot.length) slot = 0;
    if (!ads.length || (slot && slot.length !== 1)) return 0;
    var items = ads.map(function (l) {
      var price = l.price ? money(l.price) : "";
      return el("li", {}, [adLink(l, "adlink-ad", [
        web(l.logo) ? el("img", { src: l.logo, alt: "", width: "75", height: "75", loading: "eager" }) : null,
        el("span", { "class": "adlink-title" }, [l.title]),
        price ? el("span", { "class": "adlink-price" }, [price]) : null
      ])]);
    });
    var label = LABELS[config.lang] || LABELS.en;
    var b = el("aside", { "class": "adlink-box", "data-adlink": "box", "aria-label": config.label || label[1] }, [
      el("div", { "class": "adlink-label" }, [config.label || label[0]]),
      el("ul", {}, items)
    ]);
    if (slot) slot[0].appendChild(b);
    else {
      var at = lastParagraph(contentRoot());
      if (at) at.parentNode.insertBefore(b, at.nextSibling);
      else contentRoot().appendChild(b);
    }
    return ads.length;
  }

  // lastParagraph is the last paragraph of the page's main text, taken
  // whole with the list, quote or table it stands in, or null: the box
  // goes after it rather than after the page's comments and footer, nor
  // inside a comment's markup, which could hide it or lay it over the page.
  function lastParagraph(root) {
    var ps = root.querySelectorAll("p");
    for (var i = ps.length - 1; i >= 0; i--) {
      var p = ps[i];
      if (p.closest("[data-adlink], nav, header, footer, aside, a, [aria-hidden=true]") || inForm(p, root) || aroundText(p, root) || !p.textContent.trim() || !rendered(p)) continue;
      // An article inside the page's one article is a comment: skipped. Of
      // several articles (a front page's), the box goes after the last.
      var art = p.closest("article");
      if (art && art !== root && root.contains(art)) {
        if (root.localName === "article") continue;
        while (art.parentElement && art.parentElement.closest("article") !== null && root.contains(art.parentElement.closest("article"))) art = art.parentElement.closest("article");
        return art;
      }
      var outer = p.parentElement && p.parentElement.closest("li, td, blockquote, figure, dl, table, ul, ol");
      return outer && root.contains(outer) && outer !== root ? outer.closest("table, ul, ol, dl, blockquote, figure") || outer : p;
    }
    return null;
  }

  var STYLE = ".adlink-intext{display:inline-block;text-indent:0;text-decoration:underline dotted}" +
    ".adlink-box{border:1px solid #ddd;border-radius:6px;padding:.5em 1em;margin:1.5em 0;font:14px/1.4 system-ui,sans-serif}" +
    ".adlink-box ul{list-style:none;margin:0;padding:0;display:grid;grid-template-columns:repeat(auto-fill,minmax(150px,1fr));gap:.75em}" +
    ".adlink-ad{display:flex;flex-direction:column;gap:.25em;color:inherit;text-decoration:none}" +
    ".adlink-ad img{width:75px;height:75px;object-fit:contain}.adlink-price{font-weight:600}" +
    ".adlink-label{font-size:11px;color:#777;text-transform:uppercase;margin-bottom:.4em}";

  // generation counts the page's views (refresh): a view's ads are placed
  // only while it is the current one.
  var generation = 0;

  // style adds the widget's style sheet to the page, once.
  // Its own element, not one found by id: a comment's markup may carry the
  // id and would keep the sheet out.
  var sheet = null;
  function style() {
    if (!sheet || !sheet.isConnected) docProp("head").appendChild(sheet = sheet || el("style", { id: "adlink-style" }, [STYLE]));
  }

  // render places the ads once the page's fade-ins have ended: text
  // fading in (a page or its article from opacity 0 as it loads) is faint
  // until then, and would get no link.
  function render(links, source, gen) {
    var fading = docProto.getAnimations ? docFn("getAnimations")().filter(fadeIn).map(function (a) { return a.finished.catch(function () {}); }) : [];
    if (!fading.length) return place(links, source, gen);
    return Promise.race([Promise.all(fading), new Promise(function (r) { setTimeout(r, FADE_MS); })]).then(function () { return place(links, source, gen); });
  }

  // fadeIn tells whether an animation is one of opacity running that
  // ends within FADE_MS: not a spinner's, which runs on, nor one a
  // comment's markup set going for long.
  var FADE_MS = 2000;
  function fadeIn(a) {
    var e = a.effect, t = e && e.getComputedTiming();
    return a.playState === "running" && t && t.endTime - t.localTime <= FADE_MS && e.getKeyframes().some(function (k) { return "opacity" in k; });
  }

  function place(links, source, gen) {
    if (gen !== generation) return { source: "none", links: [] };
    style();
    var n = inText(links) + box(links);
    if (n && !timing.firstAd) {
      timing.firstAd = performance.now();
      if (performance.mark) performance.mark("adlink:first_ad");
    }
    if (n) watch();
    return { source: source, links: links };
  }

  // ---- Impressions. An ad a reader could see (at least half of its link
  // in view for a second) is reported to /v1/impression, a few at a time;
  // the answer's click token goes into each link the page made (&ct=):
  // without it, a click on an ad matched here does not bill. Links the
  // server made carry their own signature and keep it.
  // A click token bills for an hour (-click-token-ttl), as does the site
  // token of a link made here, so a reader who clicks an ad an hour after
  // seeing it (a long read, a tab come back to) would bill nothing: each
  // link stays watched, and one whose click token expires within RENEW_S
  // is reported again, with the site token of a manifest fetched anew, once
  // it is in view for a second again, or still is when the tab shows again.
  var SEEN_MS = 1000, BATCH_MS = 100, MAX_BEACON = 16, RENEW_S = 600;
  // A beacon that fails on the way (a timeout, a network that drops) or
  // is answered with a 5xx or a 429 (a server restarting, a deploy) is
  // sent again while its links stay in view and the page visible: after
  // RETRY_MS, then twice as long each time up to RETRY_MAX_MS, each wait
  // cut to between half and all of it at random (so that the readers a
  // restart refused do not all come back at once), never sooner than the
  // answer's Retry-After (not for one over an hour); RETRIES times at
  // most. A link that leaves view or is taken out, or a tab hidden, stops
  // its tries: it is reported again once it shows again, tries anew. The
  // server counts an impression once per window (-impression-window), so
  // a beacon sent again after one that did arrive counts no more.
  // A 429 (over a rate limit) or a 503 (the server overloaded) holds every
  // beacon of the page, not only the refused one's tries: none goes until
  // holdUntil (performance.now()), the end of the refused beacon's wait,
  // which for a 429 starts at LIMITED_MS rather than RETRY_MS (the limits'
  // Retry-After is mostly the second one token takes, and tries that come
  // through take the tokens of page lookups and of new beacons); links
  // seen meanwhile wait in seenQueue and go with the retried ones once it
  // passes. A 429 for the key's whole budget (limit api_key) is tried again
  // once at most, a beacon that timed out twice: more would add to a load
  // that lasts.
  // tries has, for a link whose last beacon failed, how many failed in a
  // row (n) of how many it may (m), hides (how often the tab was hidden or
  // shown) when it failed, and when (performance.now()) it was first sent.
  var RETRY_MS = 2000, RETRY_MAX_MS = 60000, RETRIES = 6, LIMITED_MS = 16000;
  var tries = new WeakMap(), flushed = new WeakSet(), hides = 0, holdUntil = 0, holdTimer = 0, onHold = [];
  // V2: the browser's IntersectionObserver tells whether a link can be
  // seen (v2, Chromium since 74): nothing painted over any of it, no
  // opacity below 1, no filter, no transform. It says not for much a
  // reader sees well (a page's empty layer for its notices over the whole
  // window, a cookie banner over a few pixels of the link, a link that
  // fades a little under the pointer), so where it says not, the link is
  // judged here: shown unless something is painted over most of it
  // (covered), judged again while it is in view (doubt): after a second,
  // then, while no verdict changes, after twice as long each time up to
  // eight seconds, and after a second again once the reader scrolls or
  // the window is resized; not while the page is hidden. rendered's
  // checks judge opacity and the rest when it is seen. In a frame V2
  // says it: this document cannot see what its parent paints over the
  // frame (a page framing another to have its readers click its ads).
  var V2 = !!window.IntersectionObserverEntry && "isVisible" in IntersectionObserverEntry.prototype;
  var FRAMED = window.top !== window;
  // held has, for a link in view V2 finds covered (without V2, one found
  // covered as the reader last came to it), its href with its proof
  // (click token, signature) and the href without it, which the link has
  // until it shows again: a click falling through a cover onto it bills
  // nothing.
  var held = new WeakMap();
  // watched holds the links observed: an IntersectionObserver keeps each
  // element it observes alive, so a link the page no longer holds is let
  // go (unwatchGone) whenever links are watched, and at each refresh.
  var watched = new Set(), timers = new Map(), seenQueue = [], batchTimer = 0, observer = null;
  // doubt has the links in view V2 says are not to be seen, each with
  // whether half of it is in view.
  var doubt = new Map(), doubtTimer = 0, doubtWait = 0, doubtAt = 0, doubtVerdict = new WeakMap();
  // proof is, for each reported link, the href reported (with its click
  // token) and when (Date.now()) it is to be reported again, 0 while its
  // report is on its way or when it got no click token, 1 once it failed
  // (its retry reports it again, see look): a link whose href
  // the page changed since (a framework reusing a list's elements for the
  // next results) goes to another ad, and is reported anew; inView the links at least half in view; lastMarket the last match's
  // loc and lang, whose manifest gives a link the page made its site token.
  var proof = new WeakMap(), inView = new Set(), lastMarket = null;

  function stale(a) {
    var p = proof.get(a);
    return !p || p.href !== hrefOf(a) || (p.at > 0 && Date.now() >= p.at);
  }

  // renewAt is when a link whose click token ct ("kid.d.shown.exp.mac",
  // shown in unix milliseconds, exp in seconds) came now is reported
  // again: RENEW_S before it expires, by how long it lasts rather than by
  // its expiry against this clock, which may be hours off; not before half
  // its life, nor a minute, so a short one does not report it ever again.
  function renewAt(ct) {
    var p = ct.split("."), life = p[3] * 1000 - p[2];
    return life > 0 ? Date.now() + Math.max(life - RENEW_S * 1000, life / 2, 60000) : 0;
  }

  function cover(a, on) {
    var h = held.get(a);
    if (h && h[1] !== a.href) held.delete(a), h = 0; // the page changed it
    // One without proof yet is held too: its token, come while it is
    // covered, waits (report).
    if (on && !h) {
      h = [a.href];
      a.href = a.href.replace(/&(ct|exp|sig)=[^&#]+/g, "");
      held.set(a, h.concat(a.href));
    } else if (!on && h) {
      held.delete(a);
      a.href = h[0];
    }
  }

  // covered tells whether something is painted over most of a link: at
  // more than half of the points looked at (the middle and the quarter
  // points of each of its boxes, those in the window), the topmost element
  // that paints anything is not the link or in it. An element that paints
  // nothing there (a page's empty layer for its notices, over the whole
  // window) is looked through; a cover over a few pixels of the link (a
  // cookie banner's edge, a chat button on its corner) leaves most points
  // to the link. Elements clicks fall through (pointer-events: none) are
  // found too: all take the pointer while it looks, their ::before and
  // ::after too, by a style sheet the document and each of its open
  // shadow roots adopt, first, and drop again in the same task: a
  // document's sheet does not reach into a shadow root. Its rule is in a
  // cascade layer, which a page's !important rule outside any layer,
  // however specific, does not beat; one in the page's own style
  // attribute does, and is set to auto there, marked important too,
  // and given back as it was (pin). Where a browser adopts no sheets, the element at the
  // middle of the link's first box tells, one clicks fall through not found.
  // A link V2 doubts (doubted, or in doubt) that is on top at every point
  // may lie under paint outside another element's box (outerCovered).
  // A look that throws (a page's prototypes overridden) finds it not
  // covered: the widget failing to judge a link costs its publisher
  // nothing.
  var elementFromPoint = docFn("elementFromPoint"), elementsFromPoint = docFn("elementsFromPoint"),
    sheets = Object.getOwnPropertyDescriptor(docProto, "adoptedStyleSheets"), lift = null, was = null, lifting = 0,
    rootSheets = window.ShadowRoot && Object.getOwnPropertyDescriptor(ShadowRoot.prototype, "adoptedStyleSheets"), rootsWere = [], pinned = [],
    rootPoint = window.ShadowRoot && ShadowRoot.prototype.elementsFromPoint;
  function covered(a, doubted) {
    try {
      return judge(a, doubted);
    } catch (e) {
      return false;
    }
  }

  function judge(a, doubted) {
    // A link in a shadow root (a page's custom element, adlink.watch
    // looking into it) is looked for from its root: the document finds
    // the host, which paints the link's own text.
    var rs = a.getClientRects(), r = rs[0], n = 0, all = 0, pts = [], root = a.getRootNode();
    if (!sheets || !sheets.set || !window.CSSStyleSheet || !docProto.elementsFromPoint) {
      r = r && elementFromPoint(r.left + r.width / 2, r.top + r.height / 2);
      return !!r && !a.contains(r);
    }
    return lifted(function () {
      if (!was) {
        was = Array.prototype.slice.call(sheets.get.call(document));
        // :host and ::slotted(*), in a shadow root's sheet, beat its own
        // !important rules for its host and the elements slotted in it,
        // which would beat the document's.
        if (!lift) (lift = new CSSStyleSheet()).replaceSync("@layer{*,:host,::slotted(*),::before,::after{pointer-events:auto!important}}");
        sheets.set.call(document, [lift].concat(was));
        pin($$(PINNED));
        // The open shadow roots, those within them too, are found anew
        // each time: a page may attach one to an element at any time,
        // which no MutationObserver tells.
        if (rootSheets && rootSheets.set) (function walk(all) {
          for (var i = 0, r, w; i < all.length; i++) if ((r = all[i].shadowRoot)) {
            w = Array.prototype.slice.call(rootSheets.get.call(r));
            rootSheets.set.call(r, [lift].concat(w));
            pin(r.querySelectorAll(PINNED));
            walk(r.querySelectorAll("*"), rootsWere.push([r, w]));
          }
        })(byTag("*"));
      }
      Array.prototype.forEach.call(rs, function (r) {
        [.5, .5, .25, .25, .75, .25, .25, .75, .75, .75].forEach(function (p, i, ps) {
          if (i % 2) return;
          var x = Math.max(Math.min(r.left + r.width * p, r.right - 1), r.left + 1), y = Math.max(Math.min(r.top + r.height * ps[i + 1], r.bottom - 1), r.top + 1);
          if (x < 0 || y < 0 || x >= innerWidth || y >= innerHeight) return;
          all = pts.push([x, y]);
          var e = (root !== document && rootPoint ? rootPoint.call(root, x, y) : elementsFromPoint(x, y)).find(function (e) { return a.contains(e) || paints(e, x, y, a); });
          if (!e || !a.contains(e)) n++;
        });
      });
      return n * 2 > all || (!n && V2 && (doubted || doubt.has(a)) && outerCovered(a, pts));
    });
  }

  // lifted runs f, and then gives the document and its shadow roots back
  // the page's own adopted style sheets (was, rootsWere) if covered added
  // its own meanwhile, and the page's own values of what it pinned, also
  // should f throw. Called within another, it leaves that to the outer
  // one: the links judged together (the observer's, each second's) have
  // the page's style worked out twice, not twice each.
  function lifted(f) {
    lifting++;
    try {
      return f();
    } finally {
      var w = was, p;
      if (!--lifting && w) {
        was = null;
        p = pinned.splice(0);
        sheets.set.call(document, w);
        rootsWere.splice(0).forEach(function (r) { rootSheets.set.call(r[0], r[1]); });
        p.forEach(function (q) { q[0].style.setProperty("pointer-events", q[1], "important"); });
        // The list of paint outside boxes stays: only the style
        // attributes pin set and gave back changed.
        if (p.length && outerWatch) outerSeen(outerWatch.takeRecords().filter(function (m) {
          return !p.some(function (q) { return q[0] === m.target && m.attributeName === "style"; });
        }));
      }
    }
  }

  // pin has the elements of list (those with pointer-events in their
  // style attribute, or a backslash: the name may be spelt with an
  // escape) whose own style marks it important take the pointer too, as
  // no style sheet's rule beats that: set to auto there, their value kept
  // in pinned for lifted to give back.
  var PINNED = '[style*="pointer-events" i],[style*="\\\\"]';
  function pin(list) {
    Array.prototype.forEach.call(list, function (e) {
      var s = e.style;
      if (s && s.getPropertyPriority("pointer-events")) pinned.push([e, s.getPropertyValue("pointer-events")]), s.setProperty("pointer-events", "auto", "important");
    });
  }

  // paints tells whether an element over a link paints anything at the
  // point (x, y): where its box is, a background, a border or a shadow,
  // replaced content (an image, a frame, a form's control); text of its
  // own there not transparent or with a shadow (a page's text in the
  // page's colour paints over a link; so does the shadow of text in no
  // colour); or the paint of its ::before or ::after, which the document
  // finds as the element: a background, a shadow or border more than
  // 8 pixels wide into it (a card's frame, an overlay's ring of 1
  // pixel, paints over no link), or text; not one hidden or at opacity
  // below one half (a Material ripple's disc, a tooltip, waiting for the
  // pointer, faint under it). An ancestor of link a (its shadow hosts
  // too) is found over it only by such paint, or its own text: its box
  // is under the link, unless the link is sunk under it (sunk). One at
  // opacity 0, or in one, paints nothing. A shadow host (a consent
  // banner's custom element) paints what its open shadow root paints at
  // the point over the link (one slotted in it): the document finds the
  // host, not what is in it.
  function paints(e, x, y, a) {
    if (e.checkVisibility && !e.checkVisibility({ opacityProperty: true })) return false;
    var st = getComputedStyle(e), sr = e.shadowRoot, own = !(holds(e, a) && !sunk(a, e)) && at([e.getBoundingClientRect()], x, y),
      f = sr && sr.elementsFromPoint && sr.elementsFromPoint(x, y).find(function (s) { return s !== e && (a.contains(s) || (sr.contains(s) && paints(s, x, y, a))); });
    return (!!f && !a.contains(f)) ||
      (own && (/^(img|video|canvas|svg|iframe|object|embed|input|textarea|select|button)$/.test(e.localName) || !!e.ownerSVGElement || fills(st))) ||
      ((alpha(st.color) > 0 || st.textShadow !== "none") && Array.prototype.some.call(e.childNodes, function (t) {
        var q = createRange();
        q.selectNodeContents(t);
        return t.nodeType === 3 && /\S/.test(t.nodeValue) && (own || at(q.getClientRects(), x, y));
      })) ||
      ["::before", "::after"].some(function (p) {
        var s = getComputedStyle(e, p);
        return !/^(none|normal)$/.test(s.content) && s.visibility === "visible" && s.opacity >= 0.5 && (fills(s, 8) || (s.content !== '""' && alpha(s.color) > 0));
      });
  }

  // holds tells whether e is link a or a box around it, across shadow
  // roots.
  function holds(e, a) {
    for (var n = a; n; n = parentOf(n)) if (n === e) return true;
    return false;
  }

  // sunk tells whether link a lies under the box of its ancestor e: a
  // box from a up has a z-index below 0 and is painted in a stacking
  // context around e (none between, e none), under e's background.
  function sunk(a, e) {
    for (var n = a, low = 0, st, z; n; n = parentOf(n)) {
      st = getComputedStyle(n);
      z = zOf(st, parentOf(n));
      if (n === e) return low && !stacks(st, z);
      if (stacks(st, z)) low = z < 0;
    }
  }

  // at tells whether the point (x, y) lies in one of the rectangles rs.
  function at(rs, x, y) {
    return Array.prototype.some.call(rs, function (r) { return x >= r.left && x < r.right && y >= r.top && y < r.bottom; });
  }

  // fills tells whether a box (its style st) paints: for a ::before or
  // ::after (thin, 8), a border or a shadow counts only wider than thin:
  // a shadow's spread, and for an inset one, painted into the box, its
  // offset and half its blur too (one moved down the box's height fills
  // it).
  function fills(st, thin) {
    return alpha(st.backgroundColor) > 0 || st.backgroundImage !== "none" || (st.backdropFilter || "none") !== "none" ||
      (thin ? shadows(st.boxShadow).some(function (s) { return s[4] + (/inset$/.test(s[0]) && Math.max(Math.abs(s[1]), Math.abs(s[2])) + s[3] / 2) > thin; }) : st.boxShadow !== "none") ||
      ["Top", "Right", "Bottom", "Left"].some(function (s) { return parseFloat(st["border" + s + "Width"]) > (thin || 0) && alpha(st["border" + s + "Color"]) > 0; });
  }

  // ---- Paint outside an element's box. An element's box-shadow, outline,
  // text-shadow, filter's drop-shadow, border image's outset and
  // reflection (-webkit-box-reflect) paint around its box, where no
  // point finds it: a page's 1 pixel box with a white shadow 9999 pixels
  // wide hides every link under it, and clicks fall through the shadow
  // onto them. V2 says such a link is not to be seen; where covered finds
  // the link on top at every point, outerCovered looks for that paint,
  // even when something on the link or above it would explain V2's doubt
  // (an opacity below 1, a filter, a transform: an article scaled a
  // little), which a page may add beside its shadow. It does not tell
  // what lies above what: V2 says something does.

  // outerCovered tells whether, at more than half of link a's points pts,
  // the paint outside the box of an element that is neither the link, nor
  // in it, nor around it lies, from a layer the link is not in (a
  // shadow of the same layer's normal flow is painted under the link's
  // text): a neighbour's shadow over the link's edge leaves most points;
  // the link's own focus ring, or its card's shadow, never covers it.
  // The outline of an element around it does: an outline is painted over
  // the element's content (the body's, 3000 pixels wide and as far
  // within its box).
  function outerCovered(a, pts) {
    var up = [], n = 0, e, root;
    for (e = a; e; root = e.getRootNode(), e = e.parentElement || (root !== document && root.host)) up.push(e);
    var out = outerPaint().slice();
    up.forEach(function (e) { pseudoPaint(e, out); });
    pts.forEach(function (p) {
      if (out.some(function (o) { return (o[3] || (up.indexOf(o[0]) < 0 && up.indexOf(o[4]) < 0)) && !a.contains(o[0]) && within(p, o[1]) && !within(p, o[2]); })) n++;
    });
    return n * 2 > pts.length;
  }

  function within(p, r) {
    return p[0] >= r[0] && p[0] < r[2] && p[1] >= r[1] && p[1] < r[3];
  }

  // outerPaint lists, for the document's elements and those of its open
  // shadow roots, each paint around an element's box a reader cannot see
  // through (its colour's alpha at least one half) that is painted over
  // the page's normal flow: [element, the rectangle it paints in, the
  // rectangle within it left unpainted (the element's box; for an
  // outline, the box grown by its offset; for a drop-shadow, the box
  // grown to take in what overflows it), 1 for an outline, the element's
  // layer (layerOf)]. An outline is painted over the content; a
  // shadow, a border image or a reflection only from a layer: a static
  // block's shadow is painted under all text of the normal flow (a card's
  // soft shadow over the next paragraph's link), and it covers a link
  // only from a layer the link is not in (outerCovered).
  // A shadow counts only where it is opaque: its box moved by its offset
  // and grown by its spread less half its blur; its blurred edge is not.
  // A clip-path inset() clips it (a page's full-bleed band: a shadow
  // 100vmax wide, clipped to its own rows), and so does the overflow of
  // the boxes around it (clipUp).
  // The list is kept until the page scrolls, the window is resized or the
  // DOM changes (not a link's href the widget sets), or for OUTER_MS:
  // the links' checks, their rounds and the reader's pointer share it.
  // A look stops after OUTER_BUDGET_MS, once past its first 512
  // elements, and finds nothing: a page too large to look through costs
  // its links nothing. A smaller one is looked through whole, however
  // slow the machine or busy its cores. The time of the last
  // look, in milliseconds, is adlink.timing.outerPaint, the number of
  // looks adlink.timing.outerScans.
  var OUTER_MS = 2000, OUTER_BUDGET_MS = 8, outerList = null, outerAt = 0, outerWatch = null, Mutations = window.MutationObserver;
  function outerPaint() {
    var t = performance.now();
    if (outerList && t - outerAt < OUTER_MS) return outerList;
    outerDrop();
    // The page's pending style and layout (a cover check's sheet, the
    // page's own changes) are worked out first: they are not the look's
    // to pay out of its budget.
    document.documentElement.getBoundingClientRect();
    t = performance.now();
    var all = Array.prototype.slice.call($$("*")), out = [], layers = new Map();
    outerWatching();
    for (var i = 0; i < all.length; i++) {
      if (!(i & 31) && i >= 512 && performance.now() - t > OUTER_BUDGET_MS) {
        out = [];
        break;
      }
      var e = all[i], st = getComputedStyle(e), f = st.filter, bs = st.boxShadow, ts = st.textShadow;
      if (e.shadowRoot) Array.prototype.forEach.call(e.shadowRoot.querySelectorAll("*"), function (s) { all.push(s); });
      if (st.position !== "static" || e === document.body || e === document.documentElement) pseudoPaint(e, out);
      var bi = st.borderImageSource !== "none", rf = st.webkitBoxReflect || "none", ol = st.outlineStyle !== "none";
      if (bs === "none" && ts === "none" && !ol && f.indexOf("drop-shadow(") < 0 && !bi && rf === "none") continue;
      var ly = layerOf(e, st, layers);
      if (!ly && !ol) continue;
      if (e.checkVisibility ? !e.checkVisibility({ visibilityProperty: true, opacityProperty: true }) : !e.getClientRects().length) continue;
      var r = e.getBoundingClientRect(), c = clipUp(e, st, clipOf(st.clipPath, r)), k = e.offsetWidth ? r.width / e.offsetWidth : 1, u = null;
      r = [r.left, r.top, r.right, r.bottom];
      edges(out, e, st, r, c, k, ly, 0);
      if (!ly) continue;
      if (Array.prototype.some.call(e.childNodes, function (t) { return t.nodeType === 3 && /\S/.test(t.nodeValue); })) {
        shadows(ts).forEach(function (s) { paintAround(out, e, r, c, s, k, -s[3] / 2, 0, ly); });
      }
      (f.match(/drop-shadow\(([^()]|\([^()]*\))*\)/g) || []).forEach(function (d) {
        var s = shadows(d.slice(12, -1))[0];
        paintAround(out, e, u || (u = overflowOf(e, st, r)), c, s, k, -s[3] / 2, 0, ly);
      });
      // A border image paints out to its outset (lengths, or numbers of
      // the border's widths), whatever its colours; a reflection, a copy
      // of the element beside it.
      var bo = bi ? ["Top", "Right", "Bottom", "Left"].map(function (s, i) {
        var v = st.borderImageOutset.split(" "), x = v[i] || v[i - 2] || v[0];
        return (/px$/.test(x) ? parseFloat(x) : parseFloat(x) * parseFloat(st["border" + s + "Width"])) * k;
      }) : [0, 0, 0, 0];
      if (bo.some(function (v) { return v > 0; })) out.push([e, clipped([r[0] - bo[3], r[1] - bo[0], r[2] + bo[1], r[3] + bo[2]], c), r, 0, ly]);
      if (rf !== "none") {
        var q = u || (u = overflowOf(e, st, r)), g = (parseFloat(rf.split(" ")[1]) || 0) * k, h = q[3] - q[1], wd = q[2] - q[0];
        q = { below: [q[0], q[3] + g, q[2], q[3] + g + h], above: [q[0], q[1] - g - h, q[2], q[1] - g], right: [q[2] + g, q[1], q[2] + g + wd, q[3]], left: [q[0] - g - wd, q[1], q[0] - g, q[3]] }[rf.split(" ")[0]];
        if (q) out.push([e, clipped(q, c), u, 0, ly]);
      }
    }
    timing.outerPaint = performance.now() - t;
    timing.outerScans = (timing.outerScans || 0) + 1;
    outerAt = performance.now();
    return outerList = out;
  }

  // pseudoPaint adds to out the shadows and outline around the boxes of
  // element e's ::before and ::after laid out fixed, or absolute (from
  // the box of e or of the positioned box around it, from the page's top
  // left where there is none), painted over the page's flow and over e's
  // own content as those of a positioned box are: a page paints over its
  // links from a 1 pixel body::after as from a box. A box is its left,
  // top, width and height, not its padding and border, nor the border of
  // the box it is laid out from (a few pixels its paint is taken to lie
  // in that it may not), clipped as a box in e would be, by e's own
  // overflow too. Asked of the elements that are positioned, the body,
  // the root and the link's ancestors, not of every element: two more
  // styles worked out for each would leave less of a large page looked
  // through in OUTER_BUDGET_MS.
  function pseudoPaint(e, out) {
    if (e.checkVisibility && !e.checkVisibility({ visibilityProperty: true, opacityProperty: true })) return;
    ["::before", "::after"].forEach(function (p) {
      var s = getComputedStyle(e, p), c = s.position === "absolute" && e, b = { left: 0, top: 0 }, r;
      if (/^(none|normal)$/.test(s.content) || !/^(fixed|absolute)$/.test(s.position) || s.visibility !== "visible" || s.opacity < 0.5) return;
      if (c) {
        while (c && getComputedStyle(c).position === "static") c = parentOf(c);
        b = c ? c.getBoundingClientRect() : { left: -scrollX, top: -scrollY };
      }
      r = [b.left + parseFloat(s.left), b.top + parseFloat(s.top)];
      r.push(r[0] + parseFloat(s.width), r[1] + parseFloat(s.height));
      // clipUp looks from the parent of what it is given up.
      edges(out, e, s, r, clipUp({ parentElement: e }, s, [-Infinity, -Infinity, Infinity, Infinity]), 1, 1, 1);
    });
  }

  // edges adds to out the outline of a box (element e's or its ::before's
  // or ::after's: its style st, its border box r, clipped to c, k its
  // scale) and, from its layer ly, its shadows but inset ones; over: the
  // shadows count over e's own content (outerCovered).
  function edges(out, e, st, r, c, k, ly, over) {
    var w = parseFloat(st.outlineWidth), o = parseFloat(st.outlineOffset) * k;
    if (st.outlineStyle !== "none" && w > 0) paintAround(out, e, [r[0] - o, r[1] - o, r[2] + o, r[3] + o], c, [st.outlineColor, 0, 0], k, w, 1);
    if (ly) shadows(st.boxShadow).forEach(function (s) { if (!/inset$/.test(s[0])) paintAround(out, e, r, c, s, k, s[4] - s[3] / 2, over, ly); });
  }

  // outerWatching has the list dropped when the page changes: scrolls
  // (of the document or any box in it), the window's resize, a mutation
  // of the DOM. Its own links' hrefs (their proof held or given back)
  // change no paint.
  function outerWatching() {
    if (outerWatch) return outerWatch.observe(document, { subtree: true, childList: true, attributes: true, characterData: true });
    outerWatch = Mutations ? new Mutations(outerSeen) : { observe: function () {}, disconnect: function () {}, takeRecords: function () { return []; } };
    onDocument("scroll", outerDrop, { passive: true, capture: true });
    EventTarget.prototype.addEventListener.call(window, "resize", outerDrop, { passive: true });
    outerWatching();
  }

  function outerSeen(ms) {
    if (ms.some(function (m) { return m.type !== "attributes" || m.attributeName !== "href" || !watched.has(m.target); })) outerDrop();
  }

  function outerDrop() {
    outerList = null;
    if (outerWatch) outerWatch.disconnect();
  }

  // layerOf is the nearest of element e (its style st) and the boxes
  // around it that is painted as a layer of its own, over the normal
  // flow around it: positioned, or a stacking context (stacks); null when
  // there is none (the page's normal flow). One with a z-index below 0 is
  // painted under the flow of the stacking context around it, so its
  // layer is that context's: none in the page's, but over the page in one
  // that is itself a layer (a fixed box with a z-index). Memoised in memo
  // for one look.
  function layerOf(e, st, memo) {
    if (memo.has(e)) return memo.get(e);
    var p = parentOf(e), l = null, z = zOf(st, p);
    if (st.position !== "static" || stacks(st, z)) {
      for (l = e; z < 0 && (l = p) && p !== document.documentElement; p = parentOf(p)) {
        st = getComputedStyle(p);
        if (stacks(st, zOf(st, parentOf(p)))) break;
      }
      l = l === e ? e : l && l !== document.documentElement ? layerOf(l, st, memo) : null;
    } else if (p && p !== document.documentElement) {
      l = layerOf(p, getComputedStyle(p), memo);
    }
    memo.set(e, l);
    return l;
  }

  function parentOf(e) {
    return e.parentElement || (e.parentNode && e.parentNode.host) || null;
  }

  // zOf is the z-index of an element (its style st, its parent p), NaN
  // where it has none or it does not apply: only a positioned box or a
  // flex or grid item has one.
  function zOf(st, p) {
    var z = parseInt(st.zIndex, 10);
    return z === z && (st.position !== "static" || (p && /flex|grid/.test(getComputedStyle(p).display))) ? z : NaN;
  }

  // stacks tells whether an element (its style st, its z-index z, zOf)
  // is a stacking context: one with a z-index, fixed or sticky, an opacity
  // below 1, a transform, a filter, isolation, a blend mode, a clip-path
  // or mask, paint containment, a will-change of those, a reflection.
  function stacks(st, z) {
    return z === z || /fixed|sticky/.test(st.position) ||
      st.opacity < 1 || st.transform !== "none" || st.translate !== "none" || st.rotate !== "none" || st.scale !== "none" ||
      st.perspective !== "none" || st.filter !== "none" || (st.backdropFilter || "none") !== "none" || st.isolation === "isolate" || st.mixBlendMode !== "normal" ||
      st.clipPath !== "none" || (st.maskImage || st.webkitMaskImage || "none") !== "none" || /paint|strict|content/.test(st.contain) ||
      /transform|opacity|filter|perspective|translate|rotate|scale|position|z-index|isolation|mix-blend|clip-path|mask/.test(st.willChange) ||
      (st.webkitBoxReflect || "none") !== "none";
  }

  // overflowOf is element e's box r grown, on each axis its overflow
  // (style st) is visible, to take in the boxes within it: a drop-shadow
  // is the shadow of all e paints, a child laid out outside the window
  // too, whose shadow a page moves onto it.
  function overflowOf(e, st, r) {
    var q = document.createRange(), b;
    q.selectNodeContents(e);
    b = q.getBoundingClientRect();
    if (!b.width && !b.height) return r;
    var x = st.overflowX === "visible", y = st.overflowY === "visible";
    return [x ? Math.min(r[0], b.left) : r[0], y ? Math.min(r[1], b.top) : r[1], x ? Math.max(r[2], b.right) : r[2], y ? Math.max(r[3], b.bottom) : r[3]];
  }

  // shadows parses a computed shadow list ("rgb(255, 255, 255) 0px 0px
  // 0px 9999px, rgba(0, 0, 0, 0.5) 1px 2px 3px 0px inset"): each shadow
  // as [itself, x, y, blur, spread], lengths in pixels, 0 where none.
  function shadows(list) {
    return list === "none" ? [] : list.split(/,(?![^(]*\))/).map(function (s) {
      return [s.trim()].concat((s.match(/-?[\d.]+(e[-+]?\d+)?px/g) || []).map(parseFloat), [0, 0, 0, 0]);
    });
  }

  // paintAround adds to out the paint of shadow s (its colour first) of
  // element e (its layer ly) around box r: r moved by the shadow's offset
  // and grown by d on each side (shrunk, for d below 0), lengths scaled
  // by k (the element's transform), within the clip c, r itself left
  // unpainted; over e's content with over.
  function paintAround(out, e, r, c, s, k, d, over, ly) {
    if (alpha((s[0].match(/^[a-z-]+\([^)]*\)|^[a-z]+/i) || [""])[0]) < 0.5) return;
    var x = s[1] * k, y = s[2] * k;
    d *= k;
    out.push([e, clipped([r[0] + x - d, r[1] + y - d, r[2] + x + d, r[3] + y + d], c), r, over, ly]);
  }

  function clipped(r, c) {
    return [Math.max(r[0], c[0]), Math.max(r[1], c[1]), Math.min(r[2], c[2]), Math.min(r[3], c[3])];
  }

  // clipOf is the rectangle an element's clip-path inset() leaves of its
  // box r, the whole plane for none or another shape.
  function clipOf(clip, r) {
    var m = /^inset\(([^)]*?)( round .*)?\)$/.exec(clip), v;
    if (!m) return [-Infinity, -Infinity, Infinity, Infinity];
    v = m[1].split(" ").map(function (s, i) { return parseFloat(s) * (/%$/.test(s) ? (i % 2 ? r.width : r.height) / 100 : 1); });
    v[1] = v.length > 1 ? v[1] : v[0];
    v[2] = v.length > 2 ? v[2] : v[0];
    v[3] = v.length > 3 ? v[3] : v[1];
    return [r.left + v[3], r.top + v[0], r.right - v[1], r.bottom - v[2]];
  }

  // clipUp narrows c, the rectangle element e (its style st) may paint
  // in, by the boxes around it that clip it: each ancestor whose overflow
  // is not visible (on that axis) or whose paint is contained, of those
  // e's box is laid out in (for a box of position absolute, from the
  // nearest positioned or transformed one up; for a fixed one, from the
  // nearest transformed one). A hero's dimming shadow 100vmax wide,
  // cropped to the hero, paints nothing outside it. An inline box, one
  // with an overflow-clip-margin, the body and the root clip nothing here
  // (the body's overflow is the window's).
  function clipUp(e, st, c) {
    var pos = st.position, p = e, s, r, x, y;
    while ((p = p.parentElement || (p.parentNode && p.parentNode.host)) && p !== document.body && p !== document.documentElement) {
      s = getComputedStyle(p);
      x = s.transform !== "none" || s.translate !== "none" || s.rotate !== "none" || s.scale !== "none" || s.perspective !== "none" || s.filter !== "none" || /paint|layout|strict|content/.test(s.contain);
      if (pos === "fixed" ? !x : pos === "absolute" && !x && s.position === "static") continue;
      pos = s.position;
      x = s.overflowX !== "visible";
      y = s.overflowY !== "visible";
      if (/paint|strict|content/.test(s.contain)) x = y = true;
      if ((!x && !y) || parseFloat((s.overflowClipMargin || "").replace(/^[a-z-]+ +/, "")) > 0 ||
        !/^(block|inline-block|flow-root|flex|inline-flex|grid|inline-grid|list-item)$/.test(s.display)) continue;
      r = p.getBoundingClientRect();
      c = [x ? Math.max(c[0], r.left) : c[0], y ? Math.max(c[1], r.top) : c[1], x ? Math.min(c[2], r.right) : c[2], y ? Math.min(c[3], r.bottom) : c[3]];
    }
    return c;
  }

  function hrefOf(a) {
    var h = held.get(a);
    return h && h[1] === a.href ? h[0] : a.href;
  }

  // look has a link in view reported once it stays so for SEEN_MS: not
  // one whose beacon failed while it stayed in view, the tab kept its
  // state and the page its href, which only its beacon's retry (report)
  // sends again, after its wait: the page's watch, a scroll or the checks
  // of a link in doubt do not send it sooner, nor once its tries are spent.
  function look(a) {
    var t = tries.get(a), p = proof.get(a);
    if (!t || t.h !== hides || !p || p.href !== hrefOf(a)) wait(a);
  }

  function wait(a) {
    if (!timers.has(a) && stale(a)) timers.set(a, setTimeout(function () { seen(a); }, SEEN_MS));
  }

  // sight has a link in view (on: any of it, half: half of it) wait to be
  // seen when vis, and holds its proof while V2 and covered find it covered.
  function sight(a, on, half, vis) {
    if (V2) cover(a, on && !vis);
    if (on && half && vis) {
      inView.add(a);
      look(a);
    } else {
      inView.delete(a);
      tries.delete(a);
      if (!a.isConnected) unwatch(a); // the view changed (refresh)
      else if (timers.has(a)) {
        clearTimeout(timers.get(a));
        timers.delete(a);
      }
    }
  }

  // shows tells whether a link V2 says is not to be seen shows all the
  // same. Under the reader's pointer a link stays as it was: what the page
  // shows on hover (a tooltip over its edge, a pressed link's ripple)
  // covers no link the reader already points at. In a frame V2 says it,
  // under the pointer too: the parent may cover the frame then.
  function shows(a) {
    return !FRAMED && (a.matches(":hover") ? !held.has(a) : !covered(a, 1));
  }

  // recheck judges again, each second, the links in view V2 says are not
  // to be seen: a cover may have gone while V2 still says not (the page's
  // layer for its notices stays), or come.
  function recheck() {
    doubtTimer = 0;
    if (docProp("visibilityState") === "hidden") return; // visibilitychange
    var changed = false;
    lifted(function () {
      doubt.forEach(function (half, a) {
        each(function () {
          var vis = shows(a);
          if (doubtVerdict.get(a) !== vis) changed = true, doubtVerdict.set(a, vis);
          sight(a, a.isConnected, half, vis);
        });
      });
    });
    doubtWait = changed ? SEEN_MS : Math.min(2 * doubtWait, 8 * SEEN_MS);
    doubtLater(doubtWait);
  }

  // each runs f, the judgement of one link of many: should it throw
  // (a page's prototypes overridden), the others are judged all the same
  // and the rounds go on. covered finds a link it could not look at not
  // covered.
  function each(f) {
    try {
      f();
    } catch (e) {}
  }

  // doubtLater has the links in doubt judged again in ms, or sooner if
  // already due sooner.
  function doubtLater(ms) {
    if (!doubt.size || (doubtTimer && doubtAt <= Date.now() + ms)) return;
    clearTimeout(doubtTimer);
    doubtAt = Date.now() + ms;
    doubtTimer = setTimeout(recheck, ms);
  }

  function doubtSoon() {
    doubtWait = SEEN_MS;
    doubtLater(SEEN_MS);
  }

  function watch(placedLinks) {
    if (!window.IntersectionObserver) return;
    if (!observer) {
      observer = new IntersectionObserver(function (entries) {
        lifted(function () {
          entries.forEach(function (e) {
            each(function () {
              var a = e.target, half = e.intersectionRatio >= 0.5;
              var vis = !V2 || e.isVisible || shows(a);
              if (V2 && e.isIntersecting && !e.isVisible && !FRAMED) doubt.set(a, half), doubtVerdict.set(a, vis);
              else doubt.delete(a);
              sight(a, e.isIntersecting, half, vis);
            });
          });
        });
        doubtSoon();
      }, { threshold: [0, 0.5], trackVisibility: true, delay: 100 });
      onDocument("visibilitychange", function (e) {
        if (docProp("visibilityState") === "hidden") flush(e);
        hides++;
        if (docProp("visibilityState") === "visible") inView.forEach(look), doubtSoon();
      });
      onDocument("scroll", doubtSoon, { passive: true, capture: true });
      // A cover that came since the last look (up to eight seconds ago:
      // V2 says nothing new of a link it already calls not to be seen) is
      // found when the reader's pointer comes onto the link through it,
      // before the pointer keeps the link's verdict (shows), and when the
      // link gets the focus or a key (Enter activates it, the cover come
      // since it got the focus; Space does not); and one gone since (a
      // cookie banner the reader closed, under a page's toast layer V2
      // still doubts for) gives the proof back then. A page's script that
      // focuses it and sends keys navigates nowhere (untrusted events do
      // not). Its click() during a gesture of the reader's elsewhere
      // sends Sec-Fetch-User as a reader's click does: a page's own
      // script is not held here (see README, "Finding them"). Without
      // V2, nothing tells of a cover while the link is in view: each
      // approach judges it, holding or giving back its proof, once per
      // entry of the pointer, not per move within it; before the page's
      // own mouseover shows a tooltip over it.
      ["pointerover", "focusin", "keydown"].forEach(function (type) {
        onDocument(type, function (e) {
          if (type === "keydown" && e.key !== "Enter") return;
          var t = e.composedPath ? e.composedPath()[0] : e.target;
          var a = t && t.closest && t.closest("a");
          if (!V2 && a && watched.has(a) && !(e.relatedTarget && a.contains(e.relatedTarget))) return cover(a, covered(a));
          if (!a || !doubt.has(a)) return;
          var vis = !covered(a);
          if (vis !== held.has(a)) return; // as it was
          doubtVerdict.set(a, vis);
          sight(a, true, doubt.get(a), vis);
          doubtSoon();
        }, { passive: true, capture: true });
      });
      EventTarget.prototype.addEventListener.call(window, "resize", doubtSoon, { passive: true });
      EventTarget.prototype.addEventListener.call(window, "pagehide", flush);
    }
    unwatchGone();
    var links = placedLinks || Array.prototype.filter.call($$("a.adlink-intext[data-adlink=intext], aside.adlink-box[data-adlink=box] a.adlink-ad"), function (a) { return ours.has(a); });
    for (var i = 0; i < links.length; i++) {
      if (!watched.has(links[i])) {
        watched.add(links[i]);
        observer.observe(links[i]);
      } else if (inView.has(links[i])) {
        look(links[i]); // in view still, perhaps with another href
      }
    }
  }

  // unwatch stops watching a link the page took out. One out of view
  // gets no notice when it goes, so unwatchGone looks for them all; a
  // link put back (a framework's cached view) is watched again when the
  // page next has it watched.
  function unwatch(a) {
    observer.unobserve(a);
    watched.delete(a);
    doubt.delete(a);
    inView.delete(a);
    if (timers.has(a)) {
      clearTimeout(timers.get(a));
      timers.delete(a);
    }
  }

  function unwatchGone() {
    watched.forEach(function (a) { if (!a.isConnected) unwatch(a); });
  }

  // watchPage has the ad links the page placed itself in root (the results
  // of adlink.search, an answer the page rendered) reported as the
  // widget's own are: an ad matched here bills only with the click token
  // its impression gets. Only links of this tag's key and site go, as a
  // beacon takes no other; it returns how many are watched.
  function watchPage(root) {
    root = root || document;
    if (!root.querySelectorAll) throw new TypeError("adlink.watch: root is no element");
    var links = Array.prototype.filter.call(root.querySelectorAll("a[href]"), ownAd);
    if (root.localName === "a" && ownAd(root)) links.push(root);
    watch(links);
    return links.length;
  }

  function ownAd(a) {
    var u;
    try { u = new URL(a.href); } catch (e) { return false; }
    var q = u.searchParams;
    return /\/v1\/redirect$/.test(u.pathname) && q.get("api_key") === config.apiKey && q.get("site_id") === config.siteId;
  }

  // clickOrigins are the origins of the click URLs the manifests name: a
  // click token goes into no link to another, which would hand it to that
  // host (a link under adlink.watch's root that only looks like an ad's).
  var clickOrigins = Object.create(null);

  function originOf(href) {
    try { return new URL(href, location.href).origin; } catch (e) { return ""; }
  }

  function seen(a) {
    timers.delete(a);
    if (!a.isConnected) return unwatch(a); // the view changed (refresh)
    // In view, but not to be seen (its slot faint, hidden or clipped to
    // nothing, another element at its middle): looked at again a second
    // later.
    if (!rendered(a, 1) || covered(a)) return wait(a);
    proof.set(a, { href: a.href, at: 0 });
    seenQueue.push(a);
    if (!batchTimer) batchTimer = setTimeout(report, BATCH_MS);
  }

  // hold has no beacon go for ms, then f (the retry of a refused batch)
  // run and the links queued meanwhile reported.
  function hold(ms, f) {
    if (f) onHold.push(f);
    if (performance.now() + ms <= holdUntil) return;
    holdUntil = performance.now() + ms;
    clearTimeout(holdTimer);
    holdTimer = setTimeout(unhold, ms);
  }

  function unhold() {
    var ms = holdUntil - performance.now();
    // A timer may come a little early.
    if (ms > 0) {
      holdTimer = setTimeout(unhold, ms);
      return;
    }
    holdTimer = 0;
    onHold.splice(0).forEach(function (f) { f(); });
    if (seenQueue.length && !batchTimer) batchTimer = setTimeout(report, BATCH_MS);
  }

  function report() {
    batchTimer = 0;
    // Held, the queue goes once the hold passes (unhold).
    if (holdTimer) return;
    var batch = seenQueue.splice(0, MAX_BEACON);
    if (seenQueue.length) batchTimer = setTimeout(report, BATCH_MS);
    send(batch);
  }

  // flush sends at once, as the reader leaves the page or its tab hides,
  // the links queued and those waiting for a retry (in view as it hid),
  // also during a hold: they would go with the page, uncounted. The
  // beacons go keepalive (a GET, with no body against keepalive's 64 KB).
  // Only the browser's own events flush (a page's script cannot hide its
  // tab), and a link only once until its beacon is answered: neither a
  // page's script nor a reader switching tabs gets past a hold with it
  // more than once. What a flush sent is not sent again while its answer
  // is on its way (proof), as the page comes back from the back-forward
  // cache; one sent twice all the same counts once (the window).
  function flush(e) {
    if (!e.isTrusted) return;
    inView.forEach(function (a) {
      var t = tries.get(a), p = proof.get(a);
      if (t && t.h === hides && t.n <= t.m && p && p.at === 1 && p.href === hrefOf(a) && !timers.has(a)) proof.set(a, { href: p.href, at: 0 }), seenQueue.push(a);
    });
    var q = seenQueue.filter(function (a) { return !flushed.has(a); });
    seenQueue = seenQueue.filter(function (a) { return flushed.has(a); });
    q.forEach(function (a) { flushed.add(a); });
    while (q.length) send(q.splice(0, MAX_BEACON), 1);
  }

  function send(batch, keepalive) {
    // A link the page made goes with the current site token: its own may
    // have expired (a link far down the page, first seen an hour later; a
    // link reported again), or soon will. One reported again goes without
    // its old click token. It keeps both until the new ones come, as its
    // token may bill for minutes yet, also should the beacon fail.
    var made = batch.filter(function (a) { return /[?&]tok=/.test(a.href) && !/[?&]sig=/.test(a.href); });
    var tok = made.length && lastMarket ? manifest(lastMarket[0], lastMarket[1]).then(function (m) { return m.tok; }, function () { return ""; }) : Promise.resolve("");
    var was = [], sent = [], proofs = batch.map(function (a) { return proof.get(a); }), at = performance.now();
    tok.then(function (tok) {
      batch.forEach(function (a, i) {
        var h = was[i] = hrefOf(a);
        if (made.indexOf(a) >= 0) {
          h = h.replace(/&ct=[^&]+/g, "");
          if (tok) h = h.replace(/([?&]tok=)[^&]+/, "$1" + encodeURIComponent(tok));
        }
        sent[i] = h;
      });
      var ads = sent.map(function (h) { return h.slice(h.indexOf("?") + 1); });
      // The page's address as /v2/page/link has it; one over 2 KB without
      // its query (the server needs the host, to check the site's domains).
      var url = location.href.split("#")[0];
      if (encoder.encode(url).length > MAX_URL) url = location.origin + location.pathname;
      // age is how long ago the oldest of the batch's links was first sent
      // (milliseconds; none on a first try): the server counts the retry
      // of a beacon it may have had (its answer lost) in that one's window.
      var age = Math.round(batch.reduce(function (m, a) {
        var t = tries.get(a);
        return Math.max(m, t ? at - t.at : 0);
      }, 0));
      return getJSON("/v1/impression", { api_key: config.apiKey, site_id: config.siteId, url: url, ad: ads, age: age || "" }, keepalive);
    }).then(function (r) {
      var ct = r.status === 200 && r.body && r.body.ct;
      // A 5xx or a 429 is tried again as a failed beacon is; any other
      // refusal (a 403 for a page off the site's domains, a 400) would
      // come again, and the links are not reported again.
      if (!ct) return r.status >= 500 || r.status === 429 ? retry(r) : undefined;
      batch.forEach(function (a, i) {
        var c = held.has(a);
        tries.delete(a);
        flushed.delete(a);
        if (typeof ct[i] !== "string" || !/^[\w.-]+$/.test(ct[i]) || /[?&]sig=/.test(hrefOf(a)) || hrefOf(a) !== was[i] || !clickOrigins[originOf(a.href)]) return;
        cover(a, 0);
        a.href = sent[i] + "&ct=" + ct[i];
        proof.set(a, { href: a.href, at: renewAt(ct[i]) });
        cover(a, c); // covered since it was seen: the token waits
        if (!timing.firstToken) timing.firstToken = performance.now();
      });
    }, retry);
    // retry has the batch's links reported again, each still in view and
    // not reported since, after a wait (RETRY_MS); the next view reports
    // them too. r is the answer, or the error of a beacon that failed.
    // Each link counts its own failures: one first sent with others
    // already refused (seen during a hold) has all its tries. The wait is
    // that of the link tried most that is tried again (of all, when none
    // is: a hold holds the others all the same).
    function retry(r) {
      var s = r && r.headers && r.headers.get("Retry-After"), mine = [], n = 0, k = 1;
      var status = r && r.status, e = r && r.body && r.body.error;
      var most = status === 429 && e && e.limit === "api_key" ? 1 : r && r.name === "TimeoutError" ? 2 : RETRIES;
      batch = batch.filter(function (a, i) { return proof.get(a) === proofs[i]; }); // not seen anew since
      // One that left view meanwhile is reported once it is seen again
      // (look), as one that leaves view after.
      batch = batch.filter(function (a) {
        proof.set(a, { href: proof.get(a).href, at: 1 });
        return inView.has(a);
      });
      batch.forEach(function (a, i) {
        var t = tries.get(a);
        tries.set(a, mine[i] = { h: hides, n: t && t.h === hides ? t.n + 1 : 1, m: most, at: t ? t.at : at });
        k = Math.max(k, mine[i].n);
        if (mine[i].n <= most) n = Math.max(n, mine[i].n);
      });
      var ms = Math.min((status === 429 ? LIMITED_MS : RETRY_MS) << (n || k) - 1, RETRY_MAX_MS);
      ms = Math.max(ms * (1 + Math.random()) / 2, +s * 1000 || Date.parse(s) - Date.now() || 0);
      var again = n && ms <= 36e5 && function () {
        batch.forEach(function (a, i) {
          if (tries.get(a) === mine[i] && mine[i].n <= most && mine[i].h === hides && docProp("visibilityState") !== "hidden" && inView.has(a) && !timers.has(a) && stale(a)) seen(a);
        });
      };
      if (status === 429 || status === 503) hold(Math.min(ms, 36e5), again);
      else if (again) setTimeout(again, ms);
    }
  }

  // pageLang is the language that picks a page's market when it names no
  // country, as the server's page answer does: the one market in it, or
  // none (no ads) when no market runs in it.
  function pageLang() { return config.loc ? "" : config.lang; }

  // ---- Starting early. A first view of a page the server has not analysed
  // waits for the server's pending answer before it can match, then for
  // the module's download and compilation, the longest steps of all. Where
  // the page is likely unseen, the widget starts them with its first
  // requests: the module at the URL the server wrote into this script
  // (MATCHER_URL), the shard as soon as the manifest names it, and the Go
  // runtime once the module is compiled. If the server answers with the
  // page's ads, what was started is dropped: the downloads aborted, the
  // runtime not started (or let go), nothing matched, placed or counted.
  //
  // Likely unseen is what this browser remembers of the site, in its own
  // storage (localStorage, the publisher's origin): not a page the server
  // answered here before, and not after the server knew each of the
  // reader's last KNOWN_RUN views of the site. So a reader's first view of
  // a site starts early, and a reader who moves among pages the server
  // knows stops paying for downloads the server's answers make useless
  // (docs/PERFORMANCE.md has what a first view of a known page costs).
  // The memory only turns the early start on or off: what is fetched and
  // from where is as without it.
  //
  // A publisher turns it on with data-early="true". Off by default: a
  // reader new to a site cannot tell a known page from an unseen one, so
  // on a site whose pages the server mostly knows the early download is
  // mostly wasted, and measured on loopback it saved a first view nothing
  // beyond the noise (docs/PERFORMANCE.md).
  var MATCHER_URL = "";
  var KNOWN_RUN = 3, MAX_KNOWN = 200, MAX_RECENT = 8;
  var early = null; // {ctrl, kept, sha} while a view's early start is undecided

  function memoryKey() { return "adlink:" + config.siteId; }

  // memory is what this browser remembers of the site: k, hashes of the
  // pages the server answered; r, the last views, "k" where the server knew
  // the page and "u" where it did not. Anything else there reads as nothing.
  function memory() {
    var v = null;
    try { v = JSON.parse(window.localStorage.getItem(memoryKey()) || "null"); } catch (e) { v = null; }
    var k = v && Array.isArray(v.k) ? v.k.filter(function (h) { return typeof h === "string"; }) : [];
    var r = v && typeof v.r === "string" && /^[ku]*$/.test(v.r) ? v.r : "";
    return { k: k, r: r };
  }

  // remember notes how the server answered the view of url: known, it had
  // an answer for it (ads or none), or pending.
  function remember(url, known) {
    if (!config.early) return; // nothing kept in the page's storage unless asked
    try {
      var m = memory(), h = pageHash(url);
      m.r = (m.r + (known ? "k" : "u")).slice(-MAX_RECENT);
      m.k = m.k.filter(function (x) { return x !== h; });
      if (known) m.k = m.k.concat(h).slice(-MAX_KNOWN);
      window.localStorage.setItem(memoryKey(), JSON.stringify(m));
    } catch (e) {
      // No storage (a sandboxed frame, privacy settings): every view starts early.
    }
  }

  // pageHash is a short hash of a page's address (FNV-1a), kept rather
  // than the address: a collision only costs a page its early start.
  function pageHash(url) {
    var h = 0x811c9dc5;
    for (var i = 0; i < url.length; i++) h = Math.imul(h ^ url.charCodeAt(i), 16777619);
    return (h >>> 0).toString(36);
  }

  function likelyUnseen(url) {
    var m = memory();
    return m.k.indexOf(pageHash(url)) < 0 && m.r.slice(-KNOWN_RUN) !== new Array(KNOWN_RUN + 1).join("k");
  }

  // startEarly starts the module and the shard of the page's market ahead of
  // the server's answer (see above).
  function startEarly(url) {
    // A view after the first (refresh) finds the module there already.
    if (!config.early || !MATCHER_URL || modules[MATCHER_URL] || !likelyUnseen(url)) return;
    var ctrl = window.AbortController ? new AbortController() : null, signal = ctrl ? ctrl.signal : undefined;
    var e = early = { ctrl: ctrl, kept: false, sha: "" };
    mark("early");
    compile(MATCHER_URL, signal).catch(function () {});
    manifest(config.loc, pageLang()).then(function (m) {
      if (early !== e || (signal && signal.aborted)) return;
      // A widget cached from before a deploy names another module than the
      // manifest: the view goes on as without an early start.
      if (m.matcher.url !== MATCHER_URL) return dropEarly();
      if (matchers[m.shard.sha256]) return;
      e.sha = m.shard.sha256;
      matcher(m, signal).catch(function () {});
    }, function () {});
  }

  // keepEarly keeps what a view started early: the module is wanted.
  function keepEarly() {
    if (early) early.kept = true;
    early = null;
  }

  // dropEarly drops what a view started early, unless something has asked
  // for the module since: the server has the page's ads.
  function dropEarly() {
    var e = early;
    early = null;
    if (!e || e.kept) return;
    mark("dropped");
    if (e.ctrl) e.ctrl.abort();
    // A module compiled or a runtime started is let go.
    if (modules[MATCHER_URL]) delete modules[MATCHER_URL];
    if (e.sha && matchers[e.sha]) delete matchers[e.sha];
  }

  function local(gen) {
    // The module and the shard first (if the view did not start them
    // early), then the page's text while they come.
    keepEarly();
    manifest(config.loc, pageLang()).then(matcher).catch(function () {});
    // The style sheet now, so that the page's style is worked out anew
    // while reading its text rather than when placing the ads.
    style();
    var t = pageText();
    mark("text");
    var o = { fields: FIELDS, title: t.title, text: t.text, loc: config.loc, lang: pageLang() };
    return match(config.loc, o.lang, "match_page", o).then(yieldTask).then(function (body) { mark("matched"); return render(body.link, "local", gen); });
  }

  function start() {
    var gen = ++generation;
    if (!config.auto) return Promise.resolve({ source: "none", links: [] });
    // The page's address without its fragment, which browsers never send to
    // a server (it can hold a token). One longer than the server takes (2 KB)
    // is matched here without asking.
    var url = location.href.split("#")[0];
    var answer = encoder.encode(url).length > MAX_URL ? Promise.reject(new Error("adlink: the page's address is over 2 KB")) :
      getJSON("/v2/page/link", { url: url, api_key: config.apiKey, site_id: config.siteId, loc: config.loc, fields: FIELDS });
    // The manifest is small and cached: ask for it alongside the page's ads, so
    // a pending answer finds it there. The module and the shard wait for that
    // answer unless the page is likely unseen (startEarly).
    manifest(config.loc, pageLang()).catch(function () {});
    startEarly(url);
    // Only reading and changing the page waits for it to be parsed.
    var dom = new Promise(function (resolve) {
      if (docProp("readyState") === "loading") onDocument("DOMContentLoaded", function () { resolve(); });
      else resolve();
    });
    return answer.then(function (r) {
      mark("page_link");
      var links = r.status === 200 && r.body && r.body.link;
      var refused = r.status === 400 || r.status === 401 || r.status === 403;
      if (links && !r.body.status) {
        dropEarly();
        remember(url, true);
      } else if (refused) {
        dropEarly();
      } else if (r.status === 202) {
        remember(url, false);
      }
      return dom.then(function () {
        if (links && links.length) return render(links, "server", gen);
        if (links && !r.body.status) return { source: "server", links: [] };
        if (refused) {
          // The tag is wrong or the page is not the site's: show nothing.
          console.warn("adlink: " + (r.body && r.body.error ? r.body.error.message : "HTTP " + r.status));
          return { source: "none", links: [] };
        }
        return local(gen); // pending, failed, not served, or the server is down: match here
      });
    }, function () { return dom.then(function () { return local(gen); }); });
  }

  function run() {
    return new Promise(function (resolve) { resolve(start()); }).catch(function (e) {
      console.warn(String(e));
      return { source: "none", links: [] };
    });
  }

  // clear takes out the ads placed: the box goes, and each in-text link's
  // text goes back into the text node it was cut from, with the rest cut
  // after it, so a node the page's own code holds has its whole text again.
  // Where the page has since set that node's text (a framework rendered
  // anew), the link and the rest go, and the page's text stays as the page
  // set it; where the node is gone (the page's normalize dropped it empty)
  // or the link is a copy the page made, the link gives way to its text.
  // No other node is touched (normalize would merge and drop nodes a
  // framework keeps), nor an element of the page's own with data-adlink.
  function clear() {
    var placed = $$("a.adlink-intext[data-adlink=intext], aside.adlink-box[data-adlink=box]");
    for (var i = 0; i < placed.length; i++) {
      var n = placed[i], parent = n.parentNode;
      if (!parent) continue;
      if (n.localName === "a") {
        var prev = n.previousSibling, next = n.nextSibling, from = origin.get(n);
        var rest = unchanged(next) && origin.get(next) === from ? next : null;
        if (unchanged(prev) && (prev === from || origin.get(prev) === from)) {
          prev.appendData(n.textContent + (rest ? rest.nodeValue : ""));
          left.set(prev, prev.nodeValue); // the next link in it was cut from the rest
          if (rest) parent.removeChild(rest);
        } else if (from && from.parentNode && left.get(from) !== from.nodeValue) {
          if (rest) parent.removeChild(rest); // the page set its text anew
        } else {
          parent.insertBefore(createTextNode(n.textContent), n);
        }
      }
      parent.removeChild(n);
    }
  }

  // unchanged tells whether node is a text node placing a link cut, still
  // holding the text it left there.
  function unchanged(node) {
    return !!node && node.nodeType === 3 && left.get(node) === node.nodeValue;
  }

  // refresh places the ads of the page as it is now, at its current URL:
  // the module and shard already loaded stay, so a single-page app's next
  // views are matched at once while the server analyses them.
  function refresh() {
    generation++; // whatever the last view still has on its way is not placed
    clear();
    if (observer) unwatchGone(); // the next view may place no links
    return (window.adlink.ready = run());
  }

  window.adlink = { config: config, ready: run(), search: search, matchText: matchText, refresh: refresh, watch: watchPage, timing: timing };
})();
