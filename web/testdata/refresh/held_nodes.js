const p = document.getElementById("p");
window.held = ["Wir haben das ", "Apple iPhone 15", " und das Samsung Galaxy S24 getestet.", ""].map(s => p.appendChild(document.createTextNode(s)));
