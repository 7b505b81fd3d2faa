[...document.querySelector("p b").parentElement.querySelectorAll("a")].map(a => a.textContent)
