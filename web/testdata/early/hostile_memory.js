// A page's script writes the widget's memory of the demo site as an
// attacker would: addresses and keys where hashes and "k"/"u" go, and a
// prototype that claims every page is known.
(() => {
	Object.prototype.k = ["x"];
	Object.prototype.r = "kkk";
	localStorage.setItem("adlink:demo", JSON.stringify({k: "//evil.example/matcher.wasm", r: "https://evil.example/", url: "//evil.example/"}));
})()
