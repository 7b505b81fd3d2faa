// Counts how often the page's scripts ask for the box or the visibility
// of the element whose id is "long" (window.adlinkAsked).
window.adlinkAsked = 0;
for (const f of ["getBoundingClientRect", "getClientRects", "checkVisibility"]) {
	const own = Element.prototype[f];
	Element.prototype[f] = function (...args) {
		if (this.id === "long") window.adlinkAsked++;
		return own.apply(this, args);
	};
}
